package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// TestFatalExitCodesAreNotRestarted: an exit status the process uses for
// bad input ends supervision at once; other statuses are restarted.
func TestFatalExitCodesAreNotRestarted(t *testing.T) {
	tests := []struct {
		code       int
		wantStarts int
		wantMsg    string
	}{
		{2, 1, "a restart cannot fix"},
		{3, 3, "2 restarts in a row"},
	}
	for _, tt := range tests {
		log := filepath.Join(t.TempDir(), "out.log")
		s, err := Start(Options{Name: "trainer", Argv: []string{"sh", "-c", "echo started; echo 'bad --report-to'; exit " + strconv.Itoa(tt.code)},
			LogPath: log, Restart: true, MaxRestarts: 2, RestartDelay: 100 * time.Millisecond, FatalExitCodes: []int{2}})
		if err != nil {
			t.Fatal(err)
		}
		if !waitFor(10*time.Second, func() bool { return s.GaveUp() != nil }) {
			t.Fatalf("exit %d: the supervisor never gave up", tt.code)
		}
		if got := lines(log); got != tt.wantStarts {
			t.Errorf("exit %d: %d starts, want %d", tt.code, got, tt.wantStarts)
		}
		if err := s.GaveUp(); !strings.Contains(err.Error(), tt.wantMsg) || !strings.Contains(err.Error(), "bad --report-to") {
			t.Errorf("exit %d: GaveUp = %v, want %q and the log's last lines", tt.code, err, tt.wantMsg)
		}
		s.Stop(time.Second)
	}
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// TestLauncherGroupEndsWhole: a torchrun-like launcher starts a worker
// that ignores SIGTERM, as a rank stuck in a collective does. When the
// launcher exits (a rank died), the restart comes only after the last
// group's worker is gone; Stop ends the worker too, not only the launcher.
func TestLauncherGroupEndsWhole(t *testing.T) {
	dir := t.TempDir()
	ranks := filepath.Join(dir, "ranks")
	script := `(trap "" TERM; exec sleep 300) & echo $! >> ` + ranks + `; echo started
if [ "$(wc -l < ` + ranks + `)" -eq 1 ]; then exit 1; fi
wait`
	log := filepath.Join(dir, "out.log")
	s, err := Start(Options{Name: "trainer", Argv: []string{"sh", "-c", script}, LogPath: log, Restart: true, MaxRestarts: 2, RestartDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pids := func() []int {
		b, _ := os.ReadFile(ranks)
		var out []int
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
		return out
	}
	if !waitFor(10*time.Second, func() bool { return len(pids()) == 2 }) {
		t.Fatalf("the launcher was not restarted: workers %v", pids())
	}
	first := pids()[0]
	if !waitFor(5*time.Second, func() bool { return !alive(first) }) {
		t.Errorf("the first group's worker %d still runs beside the restarted group", first)
	}
	s.Stop(2 * time.Second)
	second := pids()[1]
	if !waitFor(5*time.Second, func() bool { return !alive(second) }) {
		t.Errorf("Stop left the worker %d (it ignores SIGTERM) running", second)
	}
}
