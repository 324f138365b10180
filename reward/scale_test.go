package reward

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

type namedJudge struct{}

func (namedJudge) Judge(context.Context, *dataset.Rollout) (Result, error) { return Result{}, nil }
func (namedJudge) Name() string                                            { return "mine" }

func TestScaleOf(t *testing.T) {
	rule, err := NewRuleJudge(RuleOptions{Kind: RuleAgreement})
	if err != nil {
		t.Fatal(err)
	}
	ranged, err := NewRuleJudge(RuleOptions{Kind: RuleAgreement, Min: 1, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		judge Judge
		want  string
	}{
		{"ca", NewCAJudge(nil), "CA 1–5"},
		{"rule", rule, "rule agreement 0–1"},
		{"rule with a range", ranged, "rule agreement 1–10"},
		{"a judge that does not say", namedJudge{}, "mine"},
	}
	for _, tt := range tests {
		if got := ScaleOf(tt.judge).Label(); got != tt.want {
			t.Errorf("%s: ScaleOf().Label() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
