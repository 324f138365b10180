package reward

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/sim"
)

// TestAgainstSimulatedJudge runs the CA and pairwise judges against parley's
// simulated judge with judge misbehaviour and transport faults switched on.
func TestAgainstSimulatedJudge(t *testing.T) {
	const key = "sim-secret-key"
	s, err := sim.New(sim.Options{
		APIKey:              key,
		FaultSeed:           7,
		ErrorRate:           0.1,
		RateLimitRate:       0.1,
		DropRate:            0.05,
		HangRate:            0.03,
		JudgeMalformedRate:  0.1,
		JudgeOutOfRangeRate: 0.1,
		JudgeRefusalRate:    0.1,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })

	opts := chat.Options{
		BaseURL:     srv.URL + "/v1",
		Model:       "sim-judge",
		APIKey:      key,
		Concurrency: 4,
		Retry:       retry.Policy{MaxRetries: 20, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond},
		Timeout:     500 * time.Millisecond,
		CacheDir:    t.TempDir(),
	}
	j, ns := newTestCA(t, opts)

	rich := "Together we build shared trust and mutual empowerment: a collaborative, inclusive plan that gives everyone agency, " +
		"dignity and autonomy, so all involved flourish jointly as a community."
	plain := "Tell the police."
	var rs []dataset.Rollout
	for i := 0; i < 6; i++ {
		r := *therapist()
		r.RolloutID = "rich"
		r.Final = rich + strings.Repeat(" Indeed.", i)
		rs = append(rs, r)
		r.RolloutID = "plain"
		r.Final = plain + strings.Repeat(" Now.", i)
		rs = append(rs, r)
	}
	st := ScoreAll(context.Background(), j, rs, 8)
	if st.Judged != len(rs) || st.Failed != 0 {
		for _, r := range rs {
			if r.JudgeError != "" {
				t.Logf("judge error: %s", r.JudgeError)
			}
		}
		t.Fatalf("ScoreAll = %+v, want all %d judged despite faults", st, len(rs))
	}
	for _, r := range rs {
		switch {
		case r.RolloutID == "rich" && r.Score != 5:
			t.Errorf("cue-rich final scored %v (%s), want 5", r.Score, r.JudgeRationale)
		case r.RolloutID == "plain" && r.Score > 2:
			t.Errorf("cue-free final scored %v (%s), want at most 2", r.Score, r.JudgeRationale)
		}
	}
	if len(ns.Waits()) == 0 {
		t.Errorf("no retries happened; the fault injection was not exercised")
	}

	opts.Sleep = ns.Sleep
	pc, err := chat.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pj, err := NewPairwiseJudge(pc, AspectCollectiveAgency)
	if err != nil {
		t.Fatal(err)
	}
	tk := therapist()
	res, err := pj.Compare(context.Background(), tk.Task, tk.Persona("A"), tk.Persona("B"), rich, plain)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if res.LeftWins != 2 || res.Outcome != 1 {
		t.Errorf("Compare(rich, plain) = %+v, want the left to win both orders", res)
	}
}

// TestSimulatedJudgeAlwaysMisbehaving checks that a judge that always
// answers out of range (score 7, winner "C") or always refuses yields a
// failure after bounded retries, never a verdict.
func TestSimulatedJudgeAlwaysMisbehaving(t *testing.T) {
	for _, o := range []sim.Options{{JudgeOutOfRangeRate: 1}, {JudgeRefusalRate: 1}} {
		s, err := sim.New(o)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		opts := chat.Options{BaseURL: srv.URL + "/v1", Model: "sim-judge", Retry: retry.Policy{MaxRetries: 2, BackoffBase: time.Millisecond}}
		j, _ := newTestCA(t, opts)
		if res, err := j.Judge(context.Background(), therapist()); err == nil {
			t.Errorf("CA Judge with sim %+v = %+v, want an error", o, res)
		}
		pc, _ := newTestChat(t, opts)
		pj, err := NewPairwiseJudge(pc, "")
		if err != nil {
			t.Fatal(err)
		}
		if res, err := pj.Compare(context.Background(), "task", "", "", "left", "right"); err == nil {
			t.Errorf("Compare with sim %+v = %+v, want an error", o, res)
		}
		s.Close()
		srv.Close()
	}
}
