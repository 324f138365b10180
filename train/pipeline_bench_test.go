package train_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// inFlight wraps a serve-sim handler and measures, over its lifetime, the
// time its completions spend at target or more in flight.
type inFlight struct {
	next   http.Handler
	target int

	mu          sync.Mutex
	n           int
	last, start time.Time
	atTarget    time.Duration
	sum         float64 // integral of the in-flight count over time, in seconds
}

func (f *inFlight) move(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if f.start.IsZero() {
		f.start, f.last = now, now
	}
	dt := now.Sub(f.last)
	if f.n >= f.target {
		f.atTarget += dt
	}
	f.sum += float64(f.n) * dt.Seconds()
	f.n += d
	f.last = now
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/completions") {
		f.next.ServeHTTP(w, r)
		return
	}
	f.move(1)
	defer f.move(-1)
	f.next.ServeHTTP(w, r)
}

// window returns the share of [from, to] at target and the mean in-flight
// count over it, counting from the first completion (to is the run's end).
func (f *inFlight) window(to time.Time) (share, mean float64) {
	f.move(0)
	f.mu.Lock()
	defer f.mu.Unlock()
	total := to.Sub(f.start).Seconds()
	if total <= 0 {
		return 0, 0
	}
	return f.atTarget.Seconds() / total, f.sum / total
}

// BenchmarkPipeline measures how close the loop's step time comes to
// the better of what sampling allows and training takes, at
// train.max_staleness 0, 1 and 2, sampling step by step (k=N) and
// streaming (k=N/stream): serve-sim with injected latency (uniform turns:
// lognormal, sigma 0.2; heavy-tailed: a third of the median times a
// Pareto(1.5) draw per turn, the stragglers), every dialogue three rounds,
// 32 per step with 8 in flight, and a stub trainer that takes about a
// step's sampling (train=balanced, where the overlap matters most) or a
// quarter of it (train=fast: sampling-bound), at two sizes of step:
// 0.5 s, where the loop's fixed costs per step (the batch's fsyncs, the
// adapter loads, the state) weigh most, and 2 s (real steps take
// minutes). It reports the steady-state step time (from the trainer's
// start of step 1 to its start of the last, over the steps between), the
// sampling time a step needs with the server at its target throughout
// (ideal-sample-ms: the time the run's completions spent at the server,
// over the target's slots, per step), the efficiency max(ideal sampling, train) / step, the
// share of the run the server holds its target of 8 completions in
// flight and its mean count in flight.
func BenchmarkPipeline(b *testing.B) {
	const (
		steps  = 8
		target = 8
	)
	for _, scale := range []struct {
		name string
		mult time.Duration
	}{{"step=0.5s", 1}, {"step=2s", 4}} {
		for _, lengths := range []struct {
			name   string
			median time.Duration
			alpha  float64
		}{
			{"uniform", 12 * time.Millisecond, 0},
			{"heavy", 4 * time.Millisecond, 1.5},
		} {
			for _, tr := range []struct {
				name string
				frac time.Duration
			}{{"balanced", 4}, {"fast", 1}} {
				for _, mode := range []struct {
					k      int
					stream bool
				}{{0, false}, {1, false}, {2, false}, {1, true}, {2, true}} {
					name := fmt.Sprintf("%s/%s/train=%s/k=%d", scale.name, lengths.name, tr.name, mode.k)
					if mode.stream {
						name += "/stream"
					}
					b.Run(name, func(b *testing.B) {
						for i := 0; i < b.N; i++ {
							benchPipelineRun(b, steps, mode.k, mode.stream, target, scale.mult*tr.frac*125*time.Millisecond, sim.Options{
								AgreeProb: -1, LatencyMedian: scale.mult * lengths.median, LatencySigma: 0.2, ParetoAlpha: lengths.alpha, FaultSeed: int64(i + 1),
							})
						}
					})
				}
			}
		}
	}
}

// benchPipelineRun trains steps steps at staleness k (streaming or not)
// against serve-sim with so, a stub trainer sleeping trainFor per step,
// and reports the metrics of BenchmarkPipeline.
func benchPipelineRun(b *testing.B, steps, k int, stream bool, target int, trainFor time.Duration, so sim.Options) {
	srv, err := sim.New(so)
	if err != nil {
		b.Fatal(err)
	}
	fl := &inFlight{next: srv.Handler(), target: target}
	ts := httptest.NewServer(fl)
	defer ts.Close()
	// The client holds the server at its target; twice as many rollouts
	// in flight keep a request ready for each slot that frees while
	// others are between their turns.
	client, err := llm.New(llm.Options{Endpoints: []string{ts.URL}, MaxConcurrentPerEndpoint: target, Retry: retry.Policy{BackoffBase: time.Millisecond}})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	dir := dataset.RunDir(b.TempDir())
	opts := loopOptions(b, dir, client, steps, k)
	opts.PromptsPerStep, opts.Rollout.GroupSize, opts.Rollout.Concurrency = 8, 4, 2*target
	opts.Stream = stream
	var ends []time.Time
	opts.OnStep = func(map[string]any) { ends = append(ends, time.Now()) }
	l, err := train.NewLoop(opts)
	if err != nil {
		b.Fatal(err)
	}
	// The trainer's step starts: a loop that finishes steps lazily (k > 1)
	// records them late, the trainer sees each batch when it is written.
	starts := make([]time.Time, steps+1)
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}, gate: func(step int) {
		starts[step] = time.Now()
		time.Sleep(trainFor)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	b.ResetTimer()
	if err := l.Run(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if len(ends) != steps {
		b.Fatalf("%d steps recorded, want %d", len(ends), steps)
	}
	stepSec := starts[steps].Sub(starts[1]).Seconds() / float64(steps-1)
	share, mean := fl.window(ends[steps-1])
	// What sampling a step needs with the server at its target
	// throughout: the completions' time at the server, spread over the
	// target's slots, per step.
	fl.mu.Lock()
	sampleSec := fl.sum / float64(target) / float64(steps)
	fl.mu.Unlock()
	b.ReportMetric(stepSec*1000, "step-ms")
	b.ReportMetric(sampleSec*1000, "ideal-sample-ms")
	b.ReportMetric(trainFor.Seconds()*1000, "train-ms")
	b.ReportMetric(100*max(sampleSec, trainFor.Seconds())/stepSec, "efficiency-%")
	b.ReportMetric(100*share, "at-target-%")
	b.ReportMetric(mean, "mean-in-flight")
}
