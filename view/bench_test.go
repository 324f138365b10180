package view_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/view"
	"github.com/parleyhq/parley/view/viewtest"
)

// The benchmarks of parley view on a large run: issue 31 asks
// that a run of 1,900 steps × 256 rollouts open its overview in under a
// second and a dialogue in under 200 ms on this machine (2 cores).
// Measured here, never asserted in a test:
//
//	make bench-view
//
// The run is synthetic (view/viewtest.Large), written once into
// $PARLEY_VIEW_BENCH_DIR (default os.TempDir()/parley-view-bench) and
// reused; PARLEY_VIEW_BENCH_RUN=SxR (e.g. 100x64) benchmarks a smaller
// one. Each benchmark reports peak-RSS-MB: the process's peak resident
// memory while it ran (VmHWM, reset before it starts; Linux only).

// benchRun returns the run the benchmarks read.
func benchRun(b *testing.B) viewtest.Generated {
	b.Helper()
	spec := viewtest.Large
	if v := os.Getenv("PARLEY_VIEW_BENCH_RUN"); v != "" {
		s, r, ok := strings.Cut(v, "x")
		steps, err1 := strconv.Atoi(s)
		rollouts, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil {
			b.Fatalf("PARLEY_VIEW_BENCH_RUN=%q: want STEPSxROLLOUTS, e.g. 1900x256", v)
		}
		spec.Steps, spec.Rollouts = steps, rollouts
	}
	return viewtest.Cached(b, spec)
}

// newServer starts a server on dir, as `parley view DIR` does.
func newServer(b *testing.B, dir string) (*view.Server, http.Handler) {
	b.Helper()
	s, err := view.NewServer([]string{dir}, view.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s, s.Handler()
}

// closeServer stops what the server runs in the background, if it has a
// Close.
func closeServer(s *view.Server) {
	if c, ok := any(s).(interface{ Close() error }); ok {
		c.Close()
	}
}

// get serves one GET of url and returns the bytes of its response, failing
// on any status but 200.
func benchGet(b *testing.B, h http.Handler, url string) int {
	b.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	if rec.Code != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(rec.Body, 300))
		b.Fatalf("GET %s: %d %s", url, rec.Code, body)
	}
	return rec.Body.Len()
}

// peak measures the process's peak resident memory from its start.
type peak struct{ ok bool }

// startPeak returns the memory to the OS and resets the peak (VmHWM) to
// the present resident set: writing 5 to /proc/self/clear_refs.
func startPeak() peak {
	runtime.GC()
	debug.FreeOSMemory()
	return peak{ok: os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil}
}

// report adds peak-RSS-MB to b's results, when it can be read.
func (p peak) report(b *testing.B) {
	if !p.ok {
		return
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				b.ReportMetric(kb/1024, "peak-RSS-MB")
			}
		}
	}
}

// BenchmarkOverview: opening a run's overview, the page's HTML, the index
// of what was found and the run's curves. cold: a fresh server each time
// (NewServer included), what `parley view RUN` and a first page load
// cost; warm: the same server again (a reload).
func BenchmarkOverview(b *testing.B) {
	run := benchRun(b)
	urls := []string{"/", "/api/index", "/api/run/overview?run=0"}
	open := func(b *testing.B, h http.Handler) int {
		n := 0
		for _, u := range urls {
			n += benchGet(b, h, u)
		}
		return n
	}
	b.Run("cold", func(b *testing.B) {
		p := startPeak()
		var bytes, n int
		for b.Loop() {
			s, h := newServer(b, run.Dir)
			bytes += open(b, h)
			closeServer(s)
			n++
		}
		b.ReportMetric(float64(bytes)/1024/float64(n), "resp-KB/op")
		p.report(b)
	})
	b.Run("warm", func(b *testing.B) {
		p := startPeak()
		s, h := newServer(b, run.Dir)
		defer closeServer(s)
		open(b, h)
		var bytes, n int
		for b.Loop() {
			bytes += open(b, h)
			n++
		}
		b.ReportMetric(float64(bytes)/1024/float64(n), "resp-KB/op")
		p.report(b)
	})
}

// BenchmarkDialogue: a step's groups and one dialogue, at steps spread
// over the run (the first, the middle, the last). open: on a server that
// has served the index but not the step, the groups and then one dialogue
// (clicking a step, then a rollout: the 200 ms); groups and
// dialogue: each again on that server, a different rollout each time.
func BenchmarkDialogue(b *testing.B) {
	run := benchRun(b)
	spec := run.Spec
	groups := spec.Rollouts / spec.GroupSize
	// rollout is the i-th rollout visited: every group, every member.
	rollout := func(step, i int) string {
		i = (i * 37) % spec.Rollouts
		return viewtest.RolloutID(step, i%groups, (i/groups)%spec.GroupSize)
	}
	groupsURL := func(step int) string { return fmt.Sprintf("/api/run/groups?run=0&step=%d", step) }
	dialogueURL := func(step int, id string) string {
		return fmt.Sprintf("/api/run/dialogue?run=0&step=%d&rollout=%s", step, id)
	}
	for _, step := range []int{1, (spec.Steps + 1) / 2, spec.Steps} {
		b.Run(fmt.Sprintf("open/step=%d", step), func(b *testing.B) {
			p := startPeak()
			i := 0
			for b.Loop() {
				b.StopTimer()
				s, h := newServer(b, run.Dir)
				benchGet(b, h, "/api/index")
				b.StartTimer()
				benchGet(b, h, groupsURL(step))
				benchGet(b, h, dialogueURL(step, rollout(step, i)))
				b.StopTimer()
				closeServer(s)
				b.StartTimer()
				i++
			}
			p.report(b)
		})
		b.Run(fmt.Sprintf("groups/step=%d", step), func(b *testing.B) {
			p := startPeak()
			s, h := newServer(b, run.Dir)
			defer closeServer(s)
			benchGet(b, h, "/api/index")
			var bytes, n int
			for b.Loop() {
				bytes += benchGet(b, h, groupsURL(step))
				n++
			}
			b.ReportMetric(float64(bytes)/1024/float64(n), "resp-KB/op")
			p.report(b)
		})
		b.Run(fmt.Sprintf("dialogue/step=%d", step), func(b *testing.B) {
			p := startPeak()
			s, h := newServer(b, run.Dir)
			defer closeServer(s)
			benchGet(b, h, "/api/index")
			benchGet(b, h, groupsURL(step))
			var bytes, n int
			for b.Loop() {
				bytes += benchGet(b, h, dialogueURL(step, rollout(step, n)))
				n++
			}
			b.ReportMetric(float64(bytes)/1024/float64(n), "resp-KB/op")
			p.report(b)
		})
	}
}
