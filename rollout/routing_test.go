package rollout_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// routedSims starts n serve-sims (opts each, wrap around the handler when
// set) and returns their URLs.
func routedSims(t *testing.T, opts []sim.Options, wrap func(i int, h http.Handler) http.Handler) ([]*sim.Server, []string) {
	t.Helper()
	var sims []*sim.Server
	var urls []string
	for i, o := range opts {
		s, err := sim.New(o)
		if err != nil {
			t.Fatal(err)
		}
		var h http.Handler = s.Handler()
		if wrap != nil {
			h = wrap(i, h)
		}
		hs := httptest.NewServer(h)
		t.Cleanup(func() { s.Close(); hs.Close() })
		sims = append(sims, s)
		urls = append(urls, hs.URL)
	}
	return sims, urls
}

// playRouted plays 4 prompts × 4 five-round deliberations through one
// client over urls and returns the rollouts by id and the summary.
func playRouted(t *testing.T, urls []string, log *zap.Logger) ([]dataset.Rollout, rollout.Summary, *llm.Client) {
	t.Helper()
	client, err := llm.New(llm.Options{Endpoints: urls, RequestTimeout: 10 * time.Second, SessionHeader: llm.DefaultSessionHeader,
		JitterSeed: 1, Retry: retry.Policy{BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond}, DownFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	r, err := rollout.NewRunner(rollout.RunnerOptions{
		Game:   deliberation.New(deliberation.Options{MaxRounds: 5, TurnTokens: 64, FinalTokens: 64}),
		Policy: client, Model: sim.DefaultModel,
		Sampling:  llm.Sampling{MaxTokens: 64, Temperature: 1, TopP: 1},
		GroupSize: 4, Concurrency: 16, Seed: 42, RunID: "t", Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Rollout
	sum, err := r.Run(context.Background(), samplePrompts(t, 4), func(r *dataset.Rollout) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RolloutID < out[j].RolloutID })
	return out, sum, client
}

// TestRoutingEndpointDiesMidDialogue: one of two endpoints' engine dies
// after 20 completions, mid-dialogue; its sessions move to the other, every
// dialogue completes, and every trajectory is token for token the one a
// run on a single healthy endpoint records: nothing lost or repeated.
func TestRoutingEndpointDiesMidDialogue(t *testing.T) {
	_, clean := routedSims(t, []sim.Options{{AgreeProb: -1}}, nil)
	want, _, _ := playRouted(t, clean, nil)

	sims, urls := routedSims(t, []sim.Options{{AgreeProb: -1, EngineDiesAfter: 20}, {AgreeProb: -1}}, nil)
	got, sum, client := playRouted(t, urls, nil)
	if sum.Failed != 0 {
		t.Fatalf("%d of %d rollouts failed: %v", sum.Failed, sum.Rollouts, sum.FirstErr)
	}
	if sims[0].Stats().Requests[sim.PathCompletions] <= 20 || sims[1].Stats().Requests[sim.PathCompletions] == 0 {
		t.Fatalf("completions %d and %d: want both endpoints used, the first past its death", sims[0].Stats().Requests[sim.PathCompletions], sims[1].Stats().Requests[sim.PathCompletions])
	}
	if moves := client.Sessions().Moves; moves == 0 || sum.SessionMoves != moves {
		t.Errorf("sessions moved %d (summary %d), want some, counted in the summary", moves, sum.SessionMoves)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rollouts, want %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i].Sequences) != len(want[i].Sequences) {
			t.Fatalf("%s: %d sequences, want %d", got[i].RolloutID, len(got[i].Sequences), len(want[i].Sequences))
		}
		for k := range got[i].Sequences {
			g, w := got[i].Sequences[k], want[i].Sequences[k]
			if !slices.Equal(g.InputIDs, w.InputIDs) || !slices.Equal(g.LossMask, w.LossMask) {
				t.Errorf("%s sequence %d (%s) differs from the clean run's: %d tokens, want %d", got[i].RolloutID, k, g.Role, len(g.InputIDs), len(w.InputIDs))
			}
		}
	}
	if live := client.Sessions().Live; live != 0 {
		t.Errorf("%d sessions live after the run, want none", live)
	}
}

// TestRoutingSummaryAndStrippedHeader: the summary carries the prefix
// cache's hit rate and the endpoints' load read at the run's boundaries;
// an endpoint behind a proxy that strips the session header is named in a
// warning that names policy.session_header.
func TestRoutingSummaryAndStrippedHeader(t *testing.T) {
	strip := func(i int, h http.Handler) http.Handler {
		if i != 1 {
			return h
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del(llm.DefaultSessionHeader)
			h.ServeHTTP(w, r)
		})
	}
	sims, urls := routedSims(t, []sim.Options{{AgreeProb: -1}, {AgreeProb: -1}}, strip)
	core, logs := observer.New(zap.WarnLevel)
	_, sum, _ := playRouted(t, urls, zap.New(core))
	var q, h int64
	for _, s := range sims {
		st := s.Stats()
		q += st.PrefixCacheQueries
		h += st.PrefixCacheHits
	}
	if want := float64(h) / float64(q); sum.PrefixCacheHitRate != want || want <= 0 || want >= 1 {
		t.Errorf("PrefixCacheHitRate = %v, want the servers' %d/%d = %v", sum.PrefixCacheHitRate, h, q, want)
	}
	total := sims[0].Stats().Requests[sim.PathCompletions] + sims[1].Stats().Requests[sim.PathCompletions]
	if sum.EndpointLoadMean != float64(total)/2 || sum.EndpointLoadMax < sum.EndpointLoadMean {
		t.Errorf("endpoint load max %v mean %v, want mean %v", sum.EndpointLoadMax, sum.EndpointLoadMean, float64(total)/2)
	}
	var warned []string
	for _, e := range logs.All() {
		warned = append(warned, fmt.Sprint(e.Message, " ", e.ContextMap()["endpoint"]))
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "policy.session_header") || !strings.Contains(warned[0], urls[1]) {
		t.Errorf("warnings %q, want one naming policy.session_header and %s", warned, urls[1])
	}
}
