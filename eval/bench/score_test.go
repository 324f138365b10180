package bench

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wrongLetter returns a letter other than l.
func wrongLetter(l string) string {
	if l == "A" {
		return "B"
	}
	return "A"
}

// gpqaResponses answers the synthetic items: run 0 gets items 0–2 right and
// item 3 wrong; run 1 gets items 0–1 right, item 2 unanswered, item 3 missing.
func gpqaResponses(seed int64) []Response {
	q0 := GPQAQuestions(syntheticGPQA, seed, 0)
	q1 := GPQAQuestions(syntheticGPQA, seed, 1)
	return []Response{
		{ID: q0[0].ID, Run: 0, Response: "<think>Answer: " + wrongLetter(q0[0].Expected) + "</think>Answer: " + q0[0].Expected},
		{ID: q0[1].ID, Run: 0, Response: "**Answer: " + q0[1].Expected + "**"},
		{ID: q0[2].ID, Run: 0, Response: "the answer is (" + q0[2].Expected + ")"},
		{ID: q0[3].ID, Run: 0, Response: "Answer: " + wrongLetter(q0[3].Expected)},
		{ID: q1[0].ID, Run: 1, Response: "\\boxed{" + q1[0].Expected + "}", Expected: q1[0].Expected},
		{ID: q1[1].ID, Run: 1, Response: "Answer: " + strings.ToLower(q1[1].Expected)},
		{ID: q1[2].ID, Run: 1, Response: "I cannot decide."},
	}
}

func TestScoreGPQA(t *testing.T) {
	const seed = 11
	res, err := ScoreGPQA(syntheticGPQA, gpqaResponses(seed), seed, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Run 0: 3 of 4 = 75 %. Run 1: 2 of 4 = 50 % (one unanswered, one missing).
	// Mean 62.5; SD = sqrt((12.5² + 12.5²)/(2−1)) = 12.5·√2 = 17.67767.
	want := []RunScore{
		{Run: 0, N: 4, Correct: 3, Accuracy: 75},
		{Run: 1, N: 4, Correct: 2, Unanswered: 1, Missing: 1, Accuracy: 50},
	}
	if len(res.Runs) != 2 || res.Runs[0] != want[0] || res.Runs[1] != want[1] {
		t.Errorf("ScoreGPQA runs = %+v, want %+v", res.Runs, want)
	}
	if res.Benchmark != GPQADiamond || res.N != 4 || res.Mean != 62.5 || math.Abs(res.SD-12.5*math.Sqrt2) > 1e-9 {
		t.Errorf("ScoreGPQA = %s n %d mean %v sd %v, want %s n 4 mean 62.5 sd %v", res.Benchmark, res.N, res.Mean, res.SD, GPQADiamond, 12.5*math.Sqrt2)
	}
	if res.Seed == nil || *res.Seed != seed {
		t.Errorf("ScoreGPQA seed = %v, want %d", res.Seed, seed)
	}
	if len(res.Items) != 8 || !res.Items[7].Missing || res.Items[7].Correct || res.Items[6].Got != "" {
		t.Errorf("ScoreGPQA items = %+v", res.Items)
	}
	if got := res.Accuracies(); len(got) != 2 || got[0] != 75 || got[1] != 50 {
		t.Errorf("Accuracies() = %v, want [75 50]", got)
	}

	// Scored with another seed, responses that carry their expected letter
	// fail instead of scoring at chance.
	rs := gpqaResponses(seed)
	byID := map[string]GPQAItem{}
	for _, it := range syntheticGPQA {
		byID[it.ID] = it
	}
	for i, r := range rs {
		rs[i].Expected = ShuffleGPQA(byID[r.ID], seed, r.Run).Correct
	}
	if _, err := ScoreGPQA(syntheticGPQA, rs, seed, ScoreOptions{}); err != nil {
		t.Errorf("ScoreGPQA(right seed, expected set): %v", err)
	}
	if _, err := ScoreGPQA(syntheticGPQA, rs, seed+1, ScoreOptions{}); err == nil || !strings.Contains(err.Error(), "another seed") {
		t.Errorf("ScoreGPQA(wrong seed) error = %v, want a disagreement on expected letters", err)
	}
}

func TestScoreErrors(t *testing.T) {
	items := syntheticGPQA
	id := items[0].ID
	tests := []struct {
		name      string
		responses []Response
		want      string
	}{
		{"none", nil, "no responses"},
		{"unknown", []Response{{ID: "recNOPE", Run: 0, Response: "Answer: A"}}, `unknown item "recNOPE"`},
		{"duplicate", []Response{{ID: id, Run: 0}, {ID: id, Run: 0}}, "second response to item"},
		{"expected", []Response{{ID: id, Run: 0, Expected: "E"}}, `expects "E"`},
	}
	for _, tt := range tests {
		_, err := ScoreGPQA(items, tt.responses, 1, ScoreOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ScoreGPQA(%s) error = %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := ScoreAIME(context.Background(), AIME2024, nil, []Response{{ID: "1"}}, ScoreOptions{}); err == nil || !strings.Contains(err.Error(), "no items") {
		t.Errorf("ScoreAIME(no items) error = %v", err)
	}
}

func TestScoreAIMEOffline(t *testing.T) {
	res, err := ScoreOffline(context.Background(), AIME2024, "testdata/aime_h4.jsonl", "testdata/aime_h4_responses.jsonl", 0, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Run 0: 60 ✓ (033 after the thinking block's 34), 61 ✗ (2^{10}-1000 is
	// not an integer), 62 ✓ (last box 999): 2/3. Run 1: 60 ✗ (330), 61 no box
	// (unanswered), 62 ✓ (\text{999}): 1/3.
	// Mean (66.67 + 33.33)/2 = 50; SD = sqrt(2 · (50/3)²) = 23.570226.
	third := 100.0 / 3
	want := []RunScore{
		{Run: 0, N: 3, Correct: 2, Accuracy: 2 * third},
		{Run: 1, N: 3, Correct: 1, Unanswered: 1, Accuracy: third},
	}
	for i := range want {
		if i >= len(res.Runs) || res.Runs[i].Correct != want[i].Correct || res.Runs[i].Unanswered != want[i].Unanswered ||
			math.Abs(res.Runs[i].Accuracy-want[i].Accuracy) > 1e-9 {
			t.Errorf("ScoreOffline(aime) runs = %+v, want %+v", res.Runs, want)
			break
		}
	}
	if math.Abs(res.Mean-50) > 1e-9 || math.Abs(res.SD-math.Sqrt(2)*50/3) > 1e-9 || res.Benchmark != AIME2024 || res.Seed != nil {
		t.Errorf("ScoreOffline(aime) = %s mean %v sd %v, want aime2024 mean 50 sd %v", res.Benchmark, res.Mean, res.SD, math.Sqrt(2)*50/3)
	}
	if got := res.Items[1].Got; got != "2^{10}-1000" {
		t.Errorf("item 61 run 0 Got = %q, want the boxed text", got)
	}
	if _, err := ScoreOffline(context.Background(), "mmlu", "testdata/aime_h4.jsonl", "testdata/aime_h4_responses.jsonl", 0, ScoreOptions{}); err == nil {
		t.Errorf("ScoreOffline(mmlu) error = nil, want unknown benchmark")
	}
}

func TestScoreGPQAOfflineRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rp := filepath.Join(dir, "responses.jsonl")
	if err := WriteResponses(rp, gpqaResponses(5)); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResponses(rp)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 7 || back[4].Expected == "" || back[0].Expected != "" {
		t.Errorf("ReadResponses(WriteResponses(x)) = %+v", back)
	}
	res, err := ScoreOffline(context.Background(), GPQADiamond, "testdata/gpqa_synthetic.csv", rp, 5, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mean != 62.5 {
		t.Errorf("ScoreOffline(gpqa) mean = %v, want 62.5", res.Mean)
	}

	out := filepath.Join(dir, "gpqa.json")
	res.Model = "base"
	if err := res.WriteJSON(out, false); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "base" || got.Mean != res.Mean || got.SD != res.SD || len(got.Runs) != 2 || got.Items != nil {
		t.Errorf("ReadResult(WriteJSON(r)) = %+v, want %+v without items", got, res)
	}
	b, _ := json.Marshal(got)
	for _, key := range []string{`"benchmark":"gpqa_diamond"`, `"model":"base"`, `"accuracy":75`, `"mean":62.5`, `"sd":`, `"seed":5`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("result JSON %s lacks %s", b, key)
		}
	}
}

func TestReadResponsesErrors(t *testing.T) {
	tests := []struct{ content, want string }{
		{`{"run": 0, "response": "x"}`, "(line 1): no id"},
		{`{"id": "a", "response": "x"}`, "no run"},
		{`{"id": "a", "run": 1.5, "response": "x"}`, `run "1.5" is not an integer`},
		{`{"id": "a", "run": 0, "response": 3}`, "response must be a string"},
		{`{"id": "a", "run": 0}`, "response must be a string"},
	}
	for _, tt := range tests {
		p := writeTemp(t, "r.jsonl", tt.content+"\n")
		_, err := ReadResponses(p)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadResponses(%s) error = %v, want it to contain %q", tt.content, err, tt.want)
		}
	}
	// Numeric ids (as AIME files have) are read as text.
	p := writeTemp(t, "r.jsonl", `{"id": 60, "run": 2, "response": ""}`)
	rs, err := ReadResponses(p)
	if err != nil || len(rs) != 1 || rs[0].ID != "60" || rs[0].Run != 2 {
		t.Errorf("ReadResponses(numeric id) = %+v, %v", rs, err)
	}
}

func TestCheckScorer(t *testing.T) {
	tests := []struct {
		benchmark, scorer, want, err string
	}{
		{GPQADiamond, "", ScorerParley, ""},
		{GPQADiamond, ScorerLMEvalFlexible, ScorerLMEvalFlexible, ""},
		{AIME2025, ScorerMathVerify, ScorerMathVerify, ""},
		{AIME2024, ScorerLMEvalStrict, "", "want one of parley, math-verify"},
		{GPQADiamond, "lm-eval", "", `gpqa_diamond has no scorer "lm-eval" (want one of parley, lm-eval-strict, lm-eval-flexible, simple-evals)`},
	}
	for _, tt := range tests {
		got, err := CheckScorer(tt.benchmark, tt.scorer)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckScorer(%q, %q) = %q, %v, want %q, %q", tt.benchmark, tt.scorer, got, err, tt.want, tt.err)
		}
	}
}

func TestReferenceText(t *testing.T) {
	tests := []struct {
		in, want string
		cutOff   bool
	}{
		{"<think>x</think>\n\n Answer: C", "Answer: C", false},
		{"<think>a</think>b</think>\tc", "c", false},
		{"<think>Answer: C", "<think>Answer: C", true}, // cut off while thinking: read whole
		{"Answer: C", "Answer: C", false},
	}
	for _, tt := range tests {
		if got := ReferenceText(tt.in); got != tt.want {
			t.Errorf("ReferenceText(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := CutOff(tt.in); got != tt.cutOff {
			t.Errorf("CutOff(%q) = %v, want %v", tt.in, got, tt.cutOff)
		}
	}
}

// fakeVerifier credits a response equal to its gold answer.
type fakeVerifier struct {
	pairs []MathVerifyPair
	err   error
}

func (f *fakeVerifier) Verify(_ context.Context, pairs []MathVerifyPair) ([]MathVerdict, error) {
	f.pairs = pairs
	out := make([]MathVerdict, len(pairs))
	for i, p := range pairs {
		out[i] = MathVerdict{Correct: p.Response == p.Gold, Got: p.Response}
	}
	return out, f.err
}

// The math-verify scorer sends every response, as the references read it,
// in one batch, and takes its verdicts.
func TestScoreAIMEMathVerify(t *testing.T) {
	items := []AIMEItem{{ID: "a", Answer: 7}, {ID: "b", Answer: 8}}
	rs := []Response{
		{ID: "a", Run: 0, Response: "<think>hm</think>\n7"},
		{ID: "b", Run: 0, Response: "<think>8"}, // cut off: read whole
		{ID: "a", Run: 1, Response: "6"},
	}
	f := &fakeVerifier{}
	res, err := ScoreAIME(context.Background(), AIME2024, items, rs, ScoreOptions{Scorer: ScorerMathVerify, MathVerify: f})
	if err != nil {
		t.Fatal(err)
	}
	want := []MathVerifyPair{{"7", "7"}, {"8", "<think>8"}, {"7", "6"}}
	if !slices.Equal(f.pairs, want) {
		t.Errorf("pairs sent = %q, want %q", f.pairs, want)
	}
	if res.Scorer != ScorerMathVerify || res.Runs[0].Correct != 1 || res.Runs[0].CutOff != 1 || res.Runs[1].Correct != 0 || res.Runs[1].Missing != 1 {
		t.Errorf("ScoreAIME(math-verify) = %+v", res.Runs)
	}
	f.err = errors.New("boom")
	if _, err := ScoreAIME(context.Background(), AIME2024, items, rs, ScoreOptions{Scorer: ScorerMathVerify, MathVerify: f}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("ScoreAIME(failing verifier) error = %v", err)
	}
	if _, err := ScoreAIME(context.Background(), AIME2024, items, rs, ScoreOptions{Scorer: ScorerMathVerify}); err == nil {
		t.Errorf("ScoreAIME(math-verify, no verifier) = nil error")
	}
	if _, err := ScoreGPQA(nil, rs, 0, ScoreOptions{Scorer: ScorerMathVerify}); err == nil || !strings.Contains(err.Error(), "no scorer") {
		t.Errorf("ScoreGPQA(math-verify) error = %v", err)
	}
}
