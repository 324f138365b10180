package harness

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout/deliberation"
)

// stepEvalOptions are valid options over serve-sim: three held-out
// dilemmas, the adapter "ca" against the base, compared and scored by a
// keyword rule.
func stepEvalOptions(t *testing.T, policy *llm.Client) StepEvalOptions {
	t.Helper()
	all, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	prompts := append([]dataset.Prompt(nil), all[:3]...)
	for i := range prompts {
		prompts[i].Split = dataset.SplitEval
	}
	rule, err := reward.NewRuleJudge(reward.RuleOptions{Kind: reward.RuleKeywordShare, Keywords: []string{"we", "both", "together"}})
	if err != nil {
		t.Fatal(err)
	}
	decs, err := NewDecodings([]string{report.DecodingGreedy}, llm.Sampling{MaxTokens: 48})
	if err != nil {
		t.Fatal(err)
	}
	return StepEvalOptions{
		Prompts: prompts, Aspect: Aspect{Name: "score", Judge: ScoreComparer{Judge: rule}},
		Scorer: rule, Scale: reward.ScaleOf(rule), Decoding: decs[0],
		Game:   deliberation.New(deliberation.Options{MaxRounds: 3, TurnTokens: 48, FinalTokens: 64}),
		Policy: policy, Base: "sim-policy", Seed: 7,
	}
}

// TestNewStepEvaluatorRejects: options missing what an evaluation needs
// are refused, each saying what is missing.
func TestNewStepEvaluatorRejects(t *testing.T) {
	_, client := newSim(t)
	tests := []struct {
		name string
		edit func(*StepEvalOptions)
		want string
	}{
		{"no prompts", func(o *StepEvalOptions) { o.Prompts = nil }, "no held-out prompts"},
		{"a training row", func(o *StepEvalOptions) { o.Prompts[1].Split = dataset.SplitTrain }, `is in split "train"`},
		{"no aspect", func(o *StepEvalOptions) { o.Aspect = Aspect{} }, "needs an aspect"},
		{"no scorer", func(o *StepEvalOptions) { o.Scorer = nil }, "needs a scorer"},
		{"no decoding", func(o *StepEvalOptions) { o.Decoding = Decoding{} }, "needs a decoding"},
		{"no policy", func(o *StepEvalOptions) { o.Policy = nil }, "needs the game and the policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := stepEvalOptions(t, client)
			tt.edit(&o)
			if _, err := NewStepEvaluator(o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewStepEvaluator(%s) error = %v, want one containing %q", tt.name, err, tt.want)
			}
		})
	}
}

// TestStepEvaluator: an evaluation of step 4's adapter returns its file
// (an EvalResult naming the adapter, the base and the defaults) and its
// line, and EvalLine reads the same line back from the file, also on a
// zero StepEvaluator; a file of another step or a damaged one is an error.
func TestStepEvaluator(t *testing.T) {
	client := newSimWithAdapter(t)
	ev, err := NewStepEvaluator(stepEvalOptions(t, client))
	if err != nil {
		t.Fatal(err)
	}
	file, line, err := ev.EvaluateStep(context.Background(), 4, "ca", "/adapters/ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var r EvalResult
	if err := json.Unmarshal(file, &r); err != nil {
		t.Fatalf("the file does not decode: %v\n%s", err, file)
	}
	if r.Step != 4 || r.Adapter != "ca" || r.AdapterPath != "/adapters/ca" || r.Base != "sim-policy" || r.Prompts != 3 ||
		r.Set != "curriculum split eval" || r.Decoding != report.DecodingGreedy || len(r.Comparisons) != 3 || !strings.HasSuffix(string(file), "}\n") {
		t.Errorf("file = step %d adapter %q (%s) base %q prompts %d set %q decoding %q comparisons %d",
			r.Step, r.Adapter, r.AdapterPath, r.Base, r.Prompts, r.Set, r.Decoding, len(r.Comparisons))
	}
	if line[metrics.KeyStep] != 4 || line[metrics.KeyKind] != metrics.EvalKind || line[metrics.KeyEvalPrompts] != 3 {
		t.Errorf("line = %v, want step 4, kind eval, 3 prompts", line)
	}
	encode := func(l metrics.Line) string { b, _ := json.Marshal(l); return string(b) }
	tests := []struct {
		name    string
		ev      *StepEvaluator
		step    int
		file    []byte
		wantErr string
	}{
		{"configured", ev, 4, file, ""},
		{"zero", &StepEvaluator{}, 4, file, ""},
		{"another step", ev, 6, file, "for step 4, not 6"},
		{"damaged", ev, 4, file[:len(file)/2], "unexpected end"},
	}
	for _, tt := range tests {
		got, err := tt.ev.EvalLine(tt.step, tt.file)
		switch {
		case tt.wantErr == "" && (err != nil || encode(got) != encode(line)):
			t.Errorf("EvalLine(%s) = %v, %v; want %v", tt.name, got, err, line)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("EvalLine(%s) error = %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
	if _, _, err := (&StepEvaluator{}).EvaluateStep(context.Background(), 4, "ca", "/adapters/ca", time.Now()); err == nil {
		t.Error("EvaluateStep on a zero StepEvaluator = nil error, want one")
	}
	dir := dataset.RunDir(t.TempDir())
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir.EvalsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir.EvalPath(4), file, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := ReadEval(dir, 4); err != nil || !ok || encode(got.Metrics()) != encode(line) {
		t.Errorf("ReadEval(4) = %v, %v, %v; want the file's result", got.Metrics(), ok, err)
	}
	if _, ok, err := ReadEval(dir, 5); ok || err != nil {
		t.Errorf("ReadEval(no file) = %v, %v; want false, nil", ok, err)
	}
}
