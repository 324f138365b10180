// Package crashpoint lets crash tests kill parley at a named point of its
// run-directory protocol, where a random SIGKILL rarely lands: between the
// trainer's DONE and the state write, inside the state write. A point fires
// only when the environment variable PARLEY_CRASH_AT names it (NAME, or
// NAME:N for its N-th hit), so it does nothing in a normal run.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvVar names the point to crash at.
const EnvVar = "PARLEY_CRASH_AT"

var (
	mu   sync.Mutex
	hits = map[string]int{}
)

// Hit counts a pass through point name and, when PARLEY_CRASH_AT names it
// (and this is the hit it names), kills the process with SIGKILL: no
// deferred function, flush or exit handler runs, as in a real crash.
func Hit(name string) {
	want := os.Getenv(EnvVar)
	if want == "" {
		return
	}
	point, nth, _ := strings.Cut(want, ":")
	if point != name {
		return
	}
	mu.Lock()
	hits[name]++
	n := hits[name]
	mu.Unlock()
	if k, err := strconv.Atoi(nth); nth == "" || (err == nil && k == n) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously
	}
}
