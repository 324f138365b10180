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
// added to this process's environment, and kills it when delay() has
// passed; it starts it again until a run exits on its own, and returns how
// many runs it killed. delay is called before each run. A child that fails,
// or that never finishes in MaxAttempts runs, fails t.
func Until(t testing.TB, child string, env []string, delay func() time.Duration) (kills int) {
	t.Helper()
	for attempt := 0; attempt < MaxAttempts; attempt++ {
		cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$")
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("child %s: %v", child, err)
			}
			return kills
		case <-time.After(delay()):
			_ = cmd.Process.Kill()
			<-done
			kills++
		}
	}
	t.Fatalf("child %s never finished in %d runs", child, MaxAttempts)
	return kills
}
