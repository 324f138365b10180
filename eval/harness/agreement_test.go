package harness

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/reward"
)

// tableJudge scores a rollout by looking its final completion up; a final
// it does not know fails.
type tableJudge struct {
	name   string
	scores map[string]float64
	calls  atomic.Int64
}

func (j *tableJudge) Name() string { return j.name }

func (j *tableJudge) Judge(_ context.Context, r *dataset.Rollout) (reward.Result, error) {
	j.calls.Add(1)
	s, ok := j.scores[r.Final]
	if !ok {
		return reward.Result{}, errors.New("no verdict")
	}
	return reward.Result{Score: s, Model: j.name}, nil
}

func rolloutsOf(finals ...string) []dataset.Rollout {
	rs := make([]dataset.Rollout, len(finals))
	for i, f := range finals {
		rs[i] = dataset.Rollout{RolloutID: "r" + string(rune('a'+i)), Final: f, Task: "task"}
	}
	return rs
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRunAgreementHandComputed(t *testing.T) {
	// A = 1 2 3 4 5, B = 1 3 3 5 4 (f6: B fails; f7: the rollout failed).
	// Exact 2/5 = 40 %; all within 1; Pearson: dx = -2 -1 0 1 2,
	// dy = -2.2 -0.2 -0.2 1.8 0.8, Σdxdy = 8, Σdx² = 10, Σdy² = 8.8,
	// r = 8/√88. Quadratic kappa: observed Σw·O = 1+1+1 = 3; rows are all 1,
	// columns of B are 1 0 2 1 1, Σ_i (i−j)² = 30 15 10 15 30, so
	// Σw·E = (30 + 2·10 + 15 + 30)/5 = 19 and κ = 1 − 3/19 = 16/19.
	rs := rolloutsOf("f1", "f2", "f3", "f4", "f5", "f6", "f7")
	rs[6].Failed = true
	a := &tableJudge{name: "judge-a", scores: map[string]float64{"f1": 1, "f2": 2, "f3": 3, "f4": 4, "f5": 5, "f6": 2, "f7": 1}}
	b := &tableJudge{name: "judge-b", scores: map[string]float64{"f1": 1, "f2": 3, "f3": 3, "f4": 5, "f5": 4, "f7": 1}}
	rep, err := RunAgreement(context.Background(), rs, AgreementOptions{JudgeA: a, JudgeB: b, Label: "a vs. b"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != 5 || rep.Rollouts != 7 || rep.FailedRollouts != 1 || rep.Sampled != 6 || rep.Excluded != 1 ||
		rep.JudgeAFailed != 0 || rep.JudgeBFailed != 1 {
		t.Errorf("counts = N %d rollouts %d failed %d sampled %d excluded %d A-failed %d B-failed %d, want 5 7 1 6 1 0 1",
			rep.N, rep.Rollouts, rep.FailedRollouts, rep.Sampled, rep.Excluded, rep.JudgeAFailed, rep.JudgeBFailed)
	}
	if !near(rep.Exact, 40) || !near(rep.WithinOne, 100) {
		t.Errorf("exact, within one = %v, %v, want 40, 100", rep.Exact, rep.WithinOne)
	}
	if rep.Pearson == nil || !near(*rep.Pearson, 8/math.Sqrt(88)) {
		t.Errorf("Pearson = %v, want %v", rep.Pearson, 8/math.Sqrt(88))
	}
	if rep.Kappa == nil || !near(*rep.Kappa, 16.0/19) {
		t.Errorf("kappa = %v, want %v", rep.Kappa, 16.0/19)
	}
	want := [][]int{{1, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}}
	if !reflect.DeepEqual(rep.Confusion, want) {
		t.Errorf("confusion = %v, want %v", rep.Confusion, want)
	}
	if rep.Kind != report.KindAgreement || rep.Label != "a vs. b" || rep.JudgeA != "judge-a" || rep.JudgeB != "judge-b" {
		t.Errorf("identity = %q %q %q %q", rep.Kind, rep.Label, rep.JudgeA, rep.JudgeB)
	}
	if got := a.calls.Load(); got != 6 {
		t.Errorf("judge A calls = %d, want 6 (the failed rollout is not judged)", got)
	}
	if it := rep.Items[5]; it.RolloutID != "rf" || it.A != 2 || it.B != 0 || it.ErrorB == "" {
		t.Errorf("item 6 = %+v, want A 2 and B's error", it)
	}
	if rs[0].Judged || rs[0].Score != 0 {
		t.Errorf("the caller's rollouts were modified: %+v", rs[0])
	}
}

func TestRunAgreementErrors(t *testing.T) {
	rs := rolloutsOf("f1", "f2")
	half := &tableJudge{name: "half", scores: map[string]float64{"f1": 0.5, "f2": 3}}
	five := &tableJudge{name: "five", scores: map[string]float64{"f1": 5, "f2": 3}}
	none := &tableJudge{name: "none"}
	for _, tt := range []struct {
		name string
		rs   []dataset.Rollout
		a, b reward.Judge
	}{
		{"non-integer score", rs, five, half},
		{"score above levels", rs, five, &tableJudge{name: "six", scores: map[string]float64{"f1": 6, "f2": 3}}},
		{"no rollout judged by both", rs, five, none},
		{"every rollout failed", []dataset.Rollout{{Failed: true}}, five, five},
		{"no judge B", rs, five, nil},
	} {
		if _, err := RunAgreement(context.Background(), tt.rs, AgreementOptions{JudgeA: tt.a, JudgeB: tt.b}); err == nil {
			t.Errorf("RunAgreement(%s) = nil error, want one", tt.name)
		}
	}
}

func TestBalancedSample(t *testing.T) {
	// Levels 2 (×6), 3 (×1), 4 (×3), 5 (×2): n = 8 takes rounds of one per
	// level: round 1 gives 4, round 2 three (level 3 is out), round 3 one
	// (of level 2) → level 2: 3, 3: 1, 4: 2, 5: 2.
	levels := []int{2, 2, 2, 2, 2, 2, 3, 4, 4, 4, 5, 5}
	got := BalancedSample(levels, 8, 7)
	if len(got) != 8 || !slices.IsSorted(got) {
		t.Fatalf("BalancedSample = %v, want 8 sorted indices", got)
	}
	count := map[int]int{}
	for _, i := range got {
		count[levels[i]]++
	}
	if want := map[int]int{2: 3, 3: 1, 4: 2, 5: 2}; !reflect.DeepEqual(count, want) {
		t.Errorf("BalancedSample(8) per level = %v, want %v", count, want)
	}
	if again := BalancedSample(levels, 8, 7); !reflect.DeepEqual(again, got) {
		t.Errorf("BalancedSample is not deterministic: %v then %v", got, again)
	}
	if all := BalancedSample(levels, 20, 7); len(all) != len(levels) {
		t.Errorf("BalancedSample(20 of 12) = %d indices, want 12", len(all))
	}
	differ := false
	for seed := int64(1); seed < 20 && !differ; seed++ {
		differ = !reflect.DeepEqual(BalancedSample(levels, 8, seed), got)
	}
	if !differ {
		t.Errorf("BalancedSample ignores its seed")
	}
}

func TestRunAgreementSample(t *testing.T) {
	// Six rollouts at level 1, two at 3, two at 5: a balanced sample of 6
	// takes two of each.
	finals := []string{"a1", "a2", "a3", "a4", "a5", "a6", "b1", "b2", "c1", "c2"}
	scores := map[string]float64{"a1": 1, "a2": 1, "a3": 1, "a4": 1, "a5": 1, "a6": 1, "b1": 3, "b2": 3, "c1": 5, "c2": 5}
	t.Run("by judge A", func(t *testing.T) {
		a := &tableJudge{name: "a", scores: scores}
		b := &tableJudge{name: "b", scores: scores}
		rep, err := RunAgreement(context.Background(), rolloutsOf(finals...), AgreementOptions{JudgeA: a, JudgeB: b, Sample: 6, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if rep.SampleBy != SampleByJudgeA || rep.Sampled != 6 || rep.N != 6 || !near(rep.Exact, 100) {
			t.Errorf("sample by %q, sampled %d, N %d, exact %v; want judge A, 6, 6, 100", rep.SampleBy, rep.Sampled, rep.N, rep.Exact)
		}
		if want := [][]int{{2, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 2, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 2}}; !reflect.DeepEqual(rep.Confusion, want) {
			t.Errorf("confusion = %v, want %v", rep.Confusion, want)
		}
		if a.calls.Load() != 10 || b.calls.Load() != 6 {
			t.Errorf("calls A %d B %d, want 10 (all, to balance) and 6", a.calls.Load(), b.calls.Load())
		}
	})
	t.Run("by stored score", func(t *testing.T) {
		rs := rolloutsOf(finals...)
		for i := range rs {
			rs[i].Judged, rs[i].Score = true, float32(scores[rs[i].Final])
		}
		a := &tableJudge{name: "a", scores: scores}
		b := &tableJudge{name: "b", scores: scores}
		rep, err := RunAgreement(context.Background(), rs, AgreementOptions{JudgeA: a, JudgeB: b, Sample: 6, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if rep.SampleBy != SampleByStored || rep.N != 6 || a.calls.Load() != 6 || b.calls.Load() != 6 {
			t.Errorf("sample by %q, N %d, calls %d %d; want stored, 6, 6, 6", rep.SampleBy, rep.N, a.calls.Load(), b.calls.Load())
		}
	})
}
