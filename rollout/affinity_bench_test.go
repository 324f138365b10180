package rollout_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
)

// affinityRun is one run of the routing workload: 8 prompts × 8 (64
// deliberations, every one its 5 rounds, 128-token turns) against n
// in-process serve-sims with the prefix-cache model, all in flight.
type affinityRun struct {
	endpoints int
	// bound is llm.Options.SessionBound: ε, or negative for no affinity
	// (every completion to the least-loaded endpoint).
	bound float64
	// slots is MaxConcurrentPerEndpoint (0: the default); slow, when
	// positive, makes the first endpoint that many times slower.
	slots int
	slow  float64
	// urls, when set, are real servers serving model instead of
	// serve-sims; offset picks the prompts (a real server's cache outlives
	// a run, so each run gets prompts of its own).
	urls   []string
	model  string
	offset int
}

// affinityResult is what a run measured: the prefix-cache hit rate over
// every endpoint, the prompt tokens prefilled (not served from a cache),
// the most and mean completions an endpoint served, and sessions moved.
type affinityResult struct {
	hitRate            float64
	prefill            int64
	maxLoad, meanLoad  float64
	moves, rollouts    int64
	failed             int
	queries, completes int64
}

func runAffinity(tb testing.TB, w affinityRun) affinityResult {
	tb.Helper()
	urls, model := w.urls, w.model
	for i := 0; w.urls == nil && i < w.endpoints; i++ {
		lat := time.Millisecond
		if i == 0 && w.slow > 0 {
			lat = time.Duration(float64(lat) * w.slow)
		}
		s, err := sim.New(sim.Options{AgreeProb: -1, Template: sim.TemplateQwen3, LatencyMedian: lat})
		if err != nil {
			tb.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		tb.Cleanup(func() { s.Close(); hs.Close() })
		urls = append(urls, hs.URL)
	}
	if model == "" {
		model = sim.DefaultModel
	}
	client, err := llm.New(llm.Options{Endpoints: urls, RequestTimeout: time.Minute, SessionBound: w.bound,
		SessionHeader: llm.DefaultSessionHeader, MaxConcurrentPerEndpoint: w.slots})
	if err != nil {
		tb.Fatal(err)
	}
	defer client.Close()
	r, err := rollout.NewRunner(rollout.RunnerOptions{
		Game:   deliberation.New(deliberation.Options{MaxRounds: 5, TurnTokens: 128, FinalTokens: 128}),
		Policy: client, Model: model,
		Sampling:           llm.Sampling{MaxTokens: 128, Temperature: 1, TopP: 1},
		ChatTemplateKwargs: map[string]any{"enable_thinking": false},
		GroupSize:          8, Concurrency: 64, Seed: 1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	// Two steps of 8 prompts each, the second one measured: the first
	// step's first turns find no session bound learned yet (the most
	// sessions live at once), which a training run has after one step.
	// The measures are the client's own: the endpoints' prefix-cache
	// counters from /metrics and the completions it sent each endpoint,
	// read at the step's start and end (what a training step reports).
	ps := samplePrompts(tb, w.offset+16)[w.offset:]
	var sum rollout.Summary
	for step := 0; step < 2; step++ {
		sum, err = r.Run(context.Background(), ps[8*step:8*step+8], func(*dataset.Rollout) error { return nil })
		if err != nil {
			tb.Fatal(err)
		}
	}
	var res affinityResult
	res.hitRate = sum.PrefixCacheHitRate
	res.maxLoad, res.meanLoad = sum.EndpointLoadMax, sum.EndpointLoadMean
	res.completes = int64(sum.EndpointLoadMean * float64(len(urls)))
	res.prefill = sum.PrefixCacheQueries - sum.PrefixCacheHits
	res.queries = sum.PrefixCacheQueries
	res.moves = sum.SessionMoves
	res.rollouts = int64(sum.Rollouts)
	res.failed = sum.Failed
	if live := client.Sessions().Live; live != 0 {
		tb.Errorf("%d sessions live after the runs, want every one ended", live)
	}
	return res
}

// BenchmarkAffinityVLLM runs the workload on real servers:
// PARLEY_AFFINITY_URLS (two or more, comma-separated) serving
// PARLEY_VLLM_MODEL, at one endpoint (the first) and at all of them, with
// and without affinity; each run on prompts of its own (see README,
// "Dialogue-affine routing", for the command that starts two CPU vLLM
// servers for it). Without the variable it is skipped.
func BenchmarkAffinityVLLM(b *testing.B) {
	env := os.Getenv("PARLEY_AFFINITY_URLS")
	if env == "" {
		b.Skip("PARLEY_AFFINITY_URLS is not set")
	}
	urls := strings.Split(env, ",")
	model := os.Getenv("PARLEY_VLLM_MODEL")
	for i, run := range []struct {
		name  string
		urls  []string
		bound float64
	}{
		{"endpoints=1", urls[:1], llm.DefaultSessionBound},
		{fmt.Sprintf("endpoints=%d/least-loaded", len(urls)), urls, -1},
		{fmt.Sprintf("endpoints=%d/affinity", len(urls)), urls, llm.DefaultSessionBound},
	} {
		b.Run(run.name, func(b *testing.B) {
			var res affinityResult
			for n := 0; n < b.N; n++ {
				res = runAffinity(b, affinityRun{endpoints: len(run.urls), bound: run.bound, urls: run.urls, model: model, offset: 16 * (i + 3*n)})
			}
			reportAffinity(b, res)
		})
	}
}

func reportAffinity(b *testing.B, res affinityResult) {
	b.ReportMetric(100*res.hitRate, "hit-%")
	b.ReportMetric(float64(res.prefill), "prefill-tokens")
	b.ReportMetric(res.maxLoad/res.meanLoad, "max/mean-load")
	b.ReportMetric(float64(res.moves), "moves")
}

// BenchmarkAffinity measures dialogue-affine routing on the issue's
// workload (64 deliberations of 5 rounds, 128-token turns, Qwen3's
// template) at 1, 2, 8 and 32 serve-sim endpoints, with affinity (ε 0.25)
// and without (least-loaded per request): the prefix-cache hit rate over
// all endpoints, the prompt tokens prefilled, the most completions one
// endpoint served over the mean, and sessions moved.
func BenchmarkAffinity(b *testing.B) {
	for _, n := range []int{1, 2, 8, 32} {
		for _, mode := range []struct {
			name  string
			bound float64
		}{{"least-loaded", -1}, {"affinity", llm.DefaultSessionBound}} {
			b.Run(fmt.Sprintf("endpoints=%d/%s", n, mode.name), func(b *testing.B) {
				var res affinityResult
				for i := 0; i < b.N; i++ {
					res = runAffinity(b, affinityRun{endpoints: n, bound: mode.bound})
				}
				reportAffinity(b, res)
			})
		}
	}
}

// BenchmarkAffinitySkew measures the bound under skew: 8 endpoints of 4
// slots each, the first one 4× slower, so its slots fill and it queues
// while the others have room: ε 0.1, 0.25 and 1.0 against no affinity.
func BenchmarkAffinitySkew(b *testing.B) {
	for _, eps := range []float64{-1, 0.1, 0.25, 1} {
		b.Run(fmt.Sprintf("eps=%g", eps), func(b *testing.B) {
			var res affinityResult
			for i := 0; i < b.N; i++ {
				res = runAffinity(b, affinityRun{endpoints: 8, bound: eps, slots: 4, slow: 4})
			}
			reportAffinity(b, res)
		})
	}
}
