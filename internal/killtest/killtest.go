// Package killtest runs a test's child process again and again, killing it
// with SIGKILL at random points, until it finishes: the harness of the
// resume tests (a series, a repeated negotiation), which then compare what
// the killed runs left with an uninterrupted run's.
package killtest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// MaxAttempts bounds the runs of Until's child.
const MaxAttempts = 60

// Until starts the test binary running only the test named child, with env
// added to this process's environment, and kills it jitter() after
// progress() (the records the runs have left, say) first exceeds what it
// was when the run started; it starts it again until a run exits on its
// own, and returns how many runs it killed. Kills land on progress, not on
// a clock: every killed run has made progress, and a kill lands mid-run
// however fast or slow the machine is. A child that fails, or that never
// finishes in MaxAttempts runs, fails t.
func Until(t testing.TB, child string, env []string, progress func() int, jitter func() time.Duration) (kills int) {
	t.Helper()
	for attempt := 0; attempt < MaxAttempts; attempt++ {
		base := progress()
		cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$")
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if err, finished := waitProgress(done, base, progress, jitter); finished {
			if err != nil {
				t.Fatalf("child %s: %v", child, err)
			}
			return kills
		}
		_ = cmd.Process.Kill()
		<-done
		kills++
	}
	t.Fatalf("child %s never finished in %d runs", child, MaxAttempts)
	return kills
}

// waitProgress waits until progress passes base and then jitter, or until
// the child exits (finished).
func waitProgress(done <-chan error, base int, progress func() int, jitter func() time.Duration) (err error, finished bool) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for progress() <= base {
		select {
		case err := <-done:
			return err, true
		case <-tick.C:
		}
	}
	select {
	case err := <-done:
		return err, true
	case <-time.After(jitter()):
		return nil, false
	}
}
