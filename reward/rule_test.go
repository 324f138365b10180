package reward

import (
	"context"
	"math"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

func TestRuleJudges(t *testing.T) {
	tests := []struct {
		name   string
		opts   RuleOptions
		final  string
		agreed bool
		want   float64
	}{
		{"keywords all", RuleOptions{Kind: RuleKeywords, Keywords: []string{"agency", "common ground"}}, "We found Common Ground that expands agency.", false, 1},
		{"keywords half", RuleOptions{Kind: RuleKeywords, Keywords: []string{"agency", "trust"}}, "AGENCY for all.", false, 0.5},
		{"keywords word-bounded", RuleOptions{Kind: RuleKeywords, Keywords: []string{"agency", "trust"}}, "The agencies distrust each other.", false, 0},
		{"keywords counted once", RuleOptions{Kind: RuleKeywords, Keywords: []string{"a", "b"}}, "a a a a", false, 0.5},
		{"keywords unicode", RuleOptions{Kind: RuleKeywords, Keywords: []string{"café"}}, "Meet at the Café.", false, 1},
		{"keywords range", RuleOptions{Kind: RuleKeywords, Keywords: []string{"x", "y"}, Min: 1, Max: 5}, "x only", false, 3},
		{"length exact", RuleOptions{Kind: RuleLength, TargetLength: 4}, "one two three four", false, 1},
		{"length half", RuleOptions{Kind: RuleLength, TargetLength: 4}, "one two", false, 0.5},
		{"length over", RuleOptions{Kind: RuleLength, TargetLength: 2}, "one two three", false, 0.5},
		{"length far", RuleOptions{Kind: RuleLength, TargetLength: 2}, "a b c d e f g", false, 0},
		{"length chars", RuleOptions{Kind: RuleLength, TargetLength: 10, LengthUnit: "chars"}, "héllo", false, 0.5},
		{"agreement yes", RuleOptions{Kind: RuleAgreement}, "", true, 1},
		{"agreement no", RuleOptions{Kind: RuleAgreement}, "", false, 0},
		{"agreement range", RuleOptions{Kind: RuleAgreement, Min: -1, Max: 1}, "", false, -1},
		{"target word", RuleOptions{Kind: RuleTargetWord, TargetWord: "Yes"}, "yes, yes! no maybe", false, 0.5},
		{"target word empty", RuleOptions{Kind: RuleTargetWord, TargetWord: "yes"}, "", false, 0},
		{"keyword share", RuleOptions{Kind: RuleKeywordShare, Keywords: []string{"we", "Both"}}, "We both agree, both of us", false, 0.5},
		{"keyword share none", RuleOptions{Kind: RuleKeywordShare, Keywords: []string{"we"}}, "nothing here", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := NewRuleJudge(tt.opts)
			if err != nil {
				t.Fatalf("NewRuleJudge(%+v): %v", tt.opts, err)
			}
			res, err := j.Judge(context.Background(), &dataset.Rollout{Final: tt.final, Agreed: tt.agreed})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.Score-tt.want) > 1e-9 {
				t.Errorf("%s(%q) = %v (%s), want %v", j.Name(), tt.final, res.Score, res.Rationale, tt.want)
			}
			if res.Model != "rule:"+tt.opts.Kind || res.Rationale == "" {
				t.Errorf("result model %q rationale %q, want rule:%s and a rationale", res.Model, res.Rationale, tt.opts.Kind)
			}
		})
	}
}

// TestRuleAgreementWeight: agreement mixed into a rule's score,
// (1 − w)·rule + w·agreed, named in the judge's name and its scale.
func TestRuleAgreementWeight(t *testing.T) {
	tests := []struct {
		name   string
		opts   RuleOptions
		final  string
		agreed bool
		want   float64
		model  string
	}{
		{"agreed", RuleOptions{Kind: RuleKeywordShare, Keywords: []string{"we", "both"}, AgreementWeight: 0.5}, "We both agree, both of us", true, 0.75, "rule:keyword_share+agreement(0.5)"},
		{"not agreed", RuleOptions{Kind: RuleKeywordShare, Keywords: []string{"we", "both"}, AgreementWeight: 0.5}, "We both agree, both of us", false, 0.25, "rule:keyword_share+agreement(0.5)"},
		{"in a range", RuleOptions{Kind: RuleKeywords, Keywords: []string{"x"}, AgreementWeight: 0.25, Min: 1, Max: 5}, "x", false, 4, "rule:keywords+agreement(0.25)"},
		{"weight 0", RuleOptions{Kind: RuleKeywords, Keywords: []string{"x"}}, "x", false, 1, "rule:keywords"},
	}
	for _, tt := range tests {
		j, err := NewRuleJudge(tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := j.Judge(context.Background(), &dataset.Rollout{Final: tt.final, Agreed: tt.agreed})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Score-tt.want) > 1e-9 || res.Model != tt.model || j.Scale().Name != "rule "+tt.model[len("rule:"):] {
			t.Errorf("%s: score %v model %q scale %q, want %v, %q", tt.name, res.Score, res.Model, j.Scale().Name, tt.want, tt.model)
		}
	}
}

func TestRuleJudgeBadOptions(t *testing.T) {
	for _, opts := range []RuleOptions{
		{Kind: "vibes"},
		{Kind: RuleKeywords},
		{Kind: RuleKeywords, Keywords: []string{" "}},
		{Kind: RuleLength},
		{Kind: RuleLength, TargetLength: 3, LengthUnit: "tokens"},
		{Kind: RuleTargetWord},
		{Kind: RuleTargetWord, TargetWord: "two words"},
		{Kind: RuleKeywordShare},
		{Kind: RuleKeywordShare, Keywords: []string{"two words"}},
		{Kind: RuleAgreement, Min: 2, Max: 1},
		{Kind: RuleAgreement, AgreementWeight: 0.5},
		{Kind: RuleKeywords, Keywords: []string{"x"}, AgreementWeight: 1.5},
	} {
		if _, err := NewRuleJudge(opts); err == nil {
			t.Errorf("NewRuleJudge(%+v) = nil error, want error", opts)
		}
	}
}
