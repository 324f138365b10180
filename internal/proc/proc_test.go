package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func lines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "started\n")
}

// TestRestartsInARow checks that the restart budget counts crashes in a
// row (ResetRestarts starts it again) and that giving up names the last
// lines of the process's log.
func TestRestartsInARow(t *testing.T) {
	for _, reset := range []bool{false, true} {
		log := filepath.Join(t.TempDir(), "out.log")
		s, err := Start(Options{Name: "crasher", Argv: []string{"sh", "-c", "echo started; echo 'Traceback: boom'; exit 3"},
			LogPath: log, Restart: true, MaxRestarts: 2, RestartDelay: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if reset {
			if !waitFor(5*time.Second, func() bool { return lines(log) == 2 }) {
				t.Fatal("the second start never came")
			}
			s.ResetRestarts()
		}
		if !waitFor(10*time.Second, func() bool { return s.GaveUp() != nil }) {
			t.Fatal("the supervisor never gave up")
		}
		want := 3
		if reset {
			want = 4
		}
		if got := lines(log); got != want {
			t.Errorf("reset %v: %d starts, want %d", reset, got, want)
		}
		if err := s.GaveUp(); !strings.Contains(err.Error(), "Traceback: boom") || !strings.Contains(err.Error(), "2 restarts in a row") {
			t.Errorf("GaveUp = %v, want the log's last lines and the count", err)
		}
		s.Stop(time.Second)
	}
}

func TestFilterEnvAndEnviron(t *testing.T) {
	env := []string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "A=1=2"}
	got := FilterEnv(env, func(n string) bool { return n != "OPENAI_API_KEY" })
	if !slices.Equal(got, []string{"PATH=/bin", "A=1=2"}) {
		t.Errorf("FilterEnv = %v", got)
	}
	log := filepath.Join(t.TempDir(), "env.log")
	s, err := Start(Options{Name: "env", Argv: []string{"sh", "-c", "env"}, LogPath: log, Environ: []string{"PATH=/usr/bin:/bin"}, Env: []string{"EXTRA=yes"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(5*time.Second, func() bool { return s.Alive() != nil })
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "EXTRA=yes") || strings.Contains(string(b), "HOME=") {
		t.Errorf("child environment:\n%s\nwant EXTRA and nothing of parley's own", b)
	}
	s.Stop(time.Second)
}
