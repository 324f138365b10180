package reward

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// flakyJudge fails rollouts whose Final contains "fail".
type flakyJudge struct{}

func (flakyJudge) Name() string { return "flaky" }
func (flakyJudge) Judge(ctx context.Context, r *dataset.Rollout) (Result, error) {
	if strings.Contains(r.Final, "fail") {
		return Result{}, errors.New("judge exploded")
	}
	return Result{Score: float64(len(r.Final)), Rationale: "len", Model: "flaky-model", Cached: strings.Contains(r.Final, "cached"), PromptTokens: 7}, nil
}

func TestScoreAll(t *testing.T) {
	rs := []dataset.Rollout{
		{RolloutID: "ok", Final: "abc"},
		{RolloutID: "cached", Final: "cached"},
		{RolloutID: "fail", Final: "fail", Score: 9, Judged: true},
		{RolloutID: "broken", Failed: true, Error: "policy server down"},
	}
	st := ScoreAll(context.Background(), flakyJudge{}, rs, 3)
	want := ScoreStats{Judged: 2, Failed: 1, Cached: 1, Skipped: 1, PromptTokens: 7, Calls: 1}
	if st != want {
		t.Errorf("ScoreAll = %+v, want %+v", st, want)
	}
	if r := rs[0]; !r.Judged || r.Score != 3 || r.JudgeModel != "flaky-model" || r.JudgeRationale != "len" || r.JudgeError != "" {
		t.Errorf("ok rollout = %+v", r)
	}
	if r := rs[2]; r.Judged || r.Score != 0 || !strings.Contains(r.JudgeError, "judge exploded") || r.JudgeModel != "flaky" {
		t.Errorf("failed rollout: judged %v score %v error %q model %q, want unjudged, 0, the error, flaky",
			r.Judged, r.Score, r.JudgeError, r.JudgeModel)
	}
	if r := rs[3]; r.Judged || r.JudgeError != "" || r.JudgeModel != "" {
		t.Errorf("skipped rollout was touched: %+v", r)
	}
}

func TestScoreAllCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rs := []dataset.Rollout{{Final: "a"}, {Final: "b"}}
	st := ScoreAll(ctx, flakyJudge{}, rs, 0)
	if st.Failed != 2 || st.Judged != 0 {
		t.Errorf("ScoreAll(cancelled) = %+v, want 2 failed", st)
	}
	for _, r := range rs {
		if r.Judged || !strings.Contains(r.JudgeError, "canceled") {
			t.Errorf("rollout %+v, want unjudged with a cancellation error", r)
		}
	}
}
