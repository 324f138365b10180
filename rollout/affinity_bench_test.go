package rollout_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
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
	var sims []*sim.Server
	var urls []string
	for i := 0; i < w.endpoints; i++ {
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
		sims = append(sims, s)
		urls = append(urls, hs.URL)
	}
	client, err := llm.New(llm.Options{Endpoints: urls, RequestTimeout: time.Minute, SessionBound: w.bound,
		SessionHeader: llm.DefaultSessionHeader, MaxConcurrentPerEndpoint: w.slots})
	if err != nil {
		tb.Fatal(err)
	}
	defer client.Close()
	r, err := rollout.NewRunner(rollout.RunnerOptions{
		Game:   deliberation.New(deliberation.Options{MaxRounds: 5, TurnTokens: 128, FinalTokens: 128}),
		Policy: client, Model: sim.DefaultModel,
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
	ps := samplePrompts(tb, 16)
	var sum rollout.Summary
	var before []sim.Stats
	for step := 0; step < 2; step++ {
		before = before[:0]
		for _, s := range sims {
			before = append(before, s.Stats())
		}
		sum, err = r.Run(context.Background(), ps[8*step:8*step+8], func(*dataset.Rollout) error { return nil })
		if err != nil {
			tb.Fatal(err)
		}
	}
	var res affinityResult
	var loads []float64
	var hits int64
	for i, s := range sims {
		st := s.Stats()
		res.queries += st.PrefixCacheQueries - before[i].PrefixCacheQueries
		hits += st.PrefixCacheHits - before[i].PrefixCacheHits
		n := st.Requests[sim.PathCompletions] - before[i].Requests[sim.PathCompletions]
		res.completes += n
		loads = append(loads, float64(n))
	}
	res.hitRate = float64(hits) / float64(res.queries)
	res.prefill = res.queries - hits
	res.maxLoad = slices.Max(loads)
	res.meanLoad = float64(res.completes) / float64(len(loads))
	res.moves = client.Sessions().Moves
	res.rollouts = int64(sum.Rollouts)
	res.failed = sum.Failed
	if live := client.Sessions().Live; live != 0 {
		tb.Errorf("%d sessions live after the runs, want every one ended", live)
	}
	return res
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
