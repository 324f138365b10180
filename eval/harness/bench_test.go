package harness

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/report"
)

func TestBenchmarkName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ifeval", IFEval}, {"gpqa", bench.GPQADiamond}, {"GPQA_diamond", bench.GPQADiamond},
		{"aime24", bench.AIME2024}, {"aime2025", bench.AIME2025},
	} {
		if got, err := BenchmarkName(tt.in); err != nil || got != tt.want {
			t.Errorf("BenchmarkName(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := BenchmarkName("mmlu"); err == nil {
		t.Errorf("BenchmarkName(mmlu) = nil error, want one")
	}
}

// wrongLetter is a choice letter other than right.
func wrongLetter(right string) string {
	if right == "A" {
		return "B"
	}
	return "A"
}

// roundTrip writes responses as generations and reads them back through
// the suite, as offline scoring does.
func roundTrip(t *testing.T, s *Suite, rs []bench.Response) []bench.Response {
	t.Helper()
	gens := make([]Generation, len(rs))
	for i, r := range rs {
		gens[i] = Generation{Response: r, Tokens: 7}
	}
	path := filepath.Join(t.TempDir(), "responses.jsonl")
	if err := WriteGenerations(path, gens); err != nil {
		t.Fatal(err)
	}
	back, err := s.readResponses(path) // ReadResponses less its completeness check
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestReadResponsesIncomplete: a responses file that does not answer every
// item of the data file in each of its runs is refused, naming the run and
// the items, instead of scoring them as wrong answers.
func TestReadResponsesIncomplete(t *testing.T) {
	ifeval, err := LoadSuite(IFEval, "testdata/ifeval_inputs.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	aime, err := LoadSuite(bench.AIME2024, "testdata/aime_synthetic.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		suite *Suite
		lines string
		want  string // "" for no error
	}{
		{"ifeval complete", ifeval, `{"id": "11", "run": 0, "response": "a"}
{"id": "12", "run": 0, "response": "b"}
{"id": 13, "run": 0, "response": "c"}
`, ""},
		{"ifeval one missing", ifeval, `{"id": "11", "run": 0, "response": "a"}
{"id": "13", "run": 0, "response": "c"}
`, "run 0 answers 2 of the 3 items of the data file: no response to 1 (ids 12)"},
		{"ifeval second run short", ifeval, `{"id": "11", "run": 0, "response": "a"}
{"id": "12", "run": 0, "response": "b"}
{"id": "13", "run": 0, "response": "c"}
{"id": "11", "run": 1, "response": "a"}
`, "run 1 answers 1 of the 3 items of the data file: no response to 2 (ids 12, 13)"},
		{"ifeval reference format missing a prompt", ifeval, `{"prompt": "Write three words without commas.", "response": "sun moon stars"}
`, "run 0 answers 1 of the 3 items"},
		{"aime missing", aime, `{"id": "s1", "run": 0, "response": "\boxed{42}"}
`, "run 0 answers 1 of the 3 items of the data file: no response to 2 (ids s2, s3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(path, []byte(tt.lines), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := tt.suite.ReadResponses(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ReadResponses = %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), path+": "+tt.want) {
				t.Errorf("ReadResponses = %v, want %q after the path", err, tt.want)
			}
		})
	}
}

func checkBench(t *testing.T, r report.BenchResult, bench, model string, n int, accs []float64) {
	t.Helper()
	if r.Kind != report.KindBench || r.Benchmark != bench || r.Model != model || r.N != n || len(r.Runs) != len(accs) {
		t.Fatalf("result = %+v, want %s of %s, %d items, %d runs", r, bench, model, n, len(accs))
	}
	var sum float64
	for i, a := range accs {
		if math.Abs(r.Runs[i].Accuracy-a) > 1e-9 || r.Runs[i].Run != i {
			t.Errorf("%s run %d accuracy = %v, want %v", bench, i, r.Runs[i].Accuracy, a)
		}
		sum += a
	}
	mean := sum / float64(len(accs))
	var ss float64
	for _, a := range accs {
		ss += (a - mean) * (a - mean)
	}
	sd := 0.0
	if len(accs) > 1 {
		sd = math.Sqrt(ss / float64(len(accs)-1))
	}
	if math.Abs(r.Mean-mean) > 1e-9 || math.Abs(r.SD-sd) > 1e-9 {
		t.Errorf("%s = %v ± %v, want %v ± %v", bench, r.Mean, r.SD, mean, sd)
	}
}

func TestScoreGPQAOffline(t *testing.T) {
	const seed = 11
	s, err := LoadSuite(bench.GPQADiamond, "testdata/gpqa_synthetic.csv", seed)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 4 {
		t.Fatalf("%d items, want 4", s.Len())
	}
	// Run 0: items 1–3 right, item 4 wrong → 75 %. Run 1: items 1–2 right,
	// item 3 without an answer, item 4 missing → 50 %. Mean 62.5, SD
	// √((12.5² + 12.5²)/1) = 17.68.
	var rs []bench.Response
	for run := 0; run < 2; run++ {
		for i, q := range s.Questions(run) {
			r := bench.Response{ID: q.ID, Run: run, Expected: q.Expected}
			switch {
			case run == 0 && i < 3, run == 1 && i < 2:
				r.Response = "<think>Answer: " + wrongLetter(q.Expected) + "</think>Thinking done.\nAnswer: " + q.Expected
			case run == 0:
				r.Response = "Answer: " + wrongLetter(q.Expected)
			case i == 2:
				r.Response = "I am not sure."
			default:
				continue
			}
			rs = append(rs, r)
		}
	}
	sc, err := s.Score(context.Background(), "base", roundTrip(t, s, rs))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Results) != 1 {
		t.Fatalf("%d results, want 1", len(sc.Results))
	}
	checkBench(t, sc.Results[0], bench.GPQADiamond, "base", 4, []float64{75, 50})
	d := sc.Detail.(bench.Result)
	if d.Model != "base" || d.Runs[1].Unanswered != 1 || d.Runs[1].Missing != 1 || *d.Seed != seed {
		t.Errorf("detail = %+v, want model base, run 1 with 1 unanswered and 1 missing, seed %d", d.Runs, seed)
	}
	// Scoring with another seed shuffles differently: the recorded
	// expected letters no longer match.
	other, _ := LoadSuite(bench.GPQADiamond, "testdata/gpqa_synthetic.csv", seed+1)
	if _, err := other.Score(context.Background(), "base", rs); err == nil {
		t.Errorf("scoring with the wrong shuffle seed = nil error, want one")
	}
}

func TestScoreAIMEOffline(t *testing.T) {
	s, err := LoadSuite(bench.AIME2024, "testdata/aime_synthetic.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	// 42 right, 099 → 99 right (a leading zero), 256 answered 255: 2/3.
	rs := []bench.Response{
		{ID: "s1", Response: "6 * 7 = \\boxed{42}"},
		{ID: "s2", Response: "It is $\\boxed{99}$."},
		{ID: "s3", Response: "\\boxed{256} or rather \\boxed{255}"},
	}
	sc, err := s.Score(context.Background(), "ca-100", roundTrip(t, s, rs))
	if err != nil {
		t.Fatal(err)
	}
	checkBench(t, sc.Results[0], bench.AIME2024, "ca-100", 3, []float64{100 * 2.0 / 3})
}

func TestScoreIFEval(t *testing.T) {
	s, err := LoadSuite(IFEval, "testdata/ifeval_inputs.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	qs := s.Questions(1)
	if len(qs) != 3 || qs[0].ID != "11" || qs[0].Run != 1 || !strings.HasPrefix(qs[0].Prompt, "Write three words") {
		t.Fatalf("questions = %+v", qs)
	}
	// Run 0: key 11 passes (its thinking block, with commas, is stripped);
	// key 12 fails strict (it ends in "**") but passes loose (asterisks
	// removed); key 13 mentions apple but has a comma. Prompt-level strict
	// 1/3, instruction-level strict 2/4; loose 2/3 and 3/4.
	// Run 1: only key 11 answered (right): 1/3, 1/4, 1/3, 1/4.
	rs := []bench.Response{
		{ID: "11", Run: 0, Response: "<think>Hmm, one, two.</think>\nsun moon stars"},
		{ID: "12", Run: 0, Response: "I am done. Is there anything else?**"},
		{ID: "13", Run: 0, Response: "apple, pear"},
		{ID: "11", Run: 1, Response: "sun moon stars"},
	}
	sc, err := s.Score(context.Background(), "base", roundTrip(t, s, rs))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Results) != 4 {
		t.Fatalf("%d results, want 4", len(sc.Results))
	}
	checkBench(t, sc.Results[0], IFEval, "base", 3, []float64{100.0 / 3, 100.0 / 3})
	checkBench(t, sc.Results[1], IFEvalInstructionStrict, "base", 4, []float64{50, 25})
	checkBench(t, sc.Results[2], IFEvalPromptLoose, "base", 3, []float64{200.0 / 3, 100.0 / 3})
	checkBench(t, sc.Results[3], IFEvalInstructionLoose, "base", 4, []float64{75, 25})
	runs := sc.Detail.([]IFEvalRun)
	if len(runs) != 2 || runs[0].Report.Prompts[0].Prompt != "Write three words without commas." {
		t.Errorf("detail = %+v, want two runs with the prompt text", runs)
	}
	if _, err := s.Score(context.Background(), "base", []bench.Response{{ID: "99", Response: "x"}}); err == nil {
		t.Errorf("Score(unknown key) = nil error, want one")
	}
	if _, err := s.Score(context.Background(), "base", []bench.Response{{ID: "11"}, {ID: "11"}}); err == nil {
		t.Errorf("Score(two responses to one key) = nil error, want one")
	}

	// The reference's {prompt, response} format reads as run 0.
	path := filepath.Join(t.TempDir(), "ref.jsonl")
	ref := `{"prompt": "Write three words without commas.", "response": "sun, moon"}
{"prompt": "Write three words without commas.", "response": "sun moon stars"}
{"prompt": "Name a fruit, mention apple, and use no commas.", "response": "apple"}
`
	if err := os.WriteFile(path, []byte(ref), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.readResponses(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []bench.Response{{ID: "11", Response: "sun moon stars"}, {ID: "13", Response: "apple"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadResponses(reference format) = %+v, want %+v", got, want)
	}
}

func TestGenerate(t *testing.T) {
	client := newSimWithAdapter(t)
	ctx := context.Background()
	s, err := LoadSuite(bench.AIME2025, "testdata/aime_synthetic.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	qs := append(s.Questions(0), s.Questions(1)...)
	spy := &spyPolicy{Policy: client, model: "ca", failOn: "compute 2^8"}
	gens := map[string][]Generation{}
	for _, model := range []string{"sim-policy", "ca"} {
		var done atomic.Int64
		g, err := Generate(ctx, qs, GenerateOptions{
			Policy: spy, Model: model, Preset: bench.Qwen3Thinking(), MaxTokens: 40, Seed: 9, Concurrency: 3,
			OnDone: func() { done.Add(1) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if done.Load() != int64(len(qs)) || len(g) != len(qs) {
			t.Fatalf("%s: %d done, %d generations, want %d", model, done.Load(), len(g), len(qs))
		}
		gens[model] = g
	}
	for model, g := range gens {
		for i, x := range g {
			if x.ID != qs[i].ID || x.Run != qs[i].Run || x.Expected != qs[i].Expected {
				t.Errorf("%s generation %d = %s/%d, want %s/%d", model, i, x.ID, x.Run, qs[i].ID, qs[i].Run)
			}
			failed := model == "ca" && x.ID == "s3"
			switch {
			case failed && (x.Error == "" || x.Response.Response != ""):
				t.Errorf("%s %s: error %q, response %q, want an error and no response", model, x.ID, x.Error, x.Response.Response)
			case !failed && (x.Error != "" || x.Response.Response == "" || x.Tokens == 0 || x.Tokens > 40):
				t.Errorf("%s %s: error %q, %d tokens, response %q", model, x.ID, x.Error, x.Tokens, x.Response.Response)
			case strings.Contains(x.Response.Response, "<|im_end|>"):
				t.Errorf("%s %s: end token kept: %q", model, x.ID, x.Response.Response)
			}
		}
	}
	// Both models sample each question with the same seeds, and the two
	// runs with different ones.
	base, ca := spy.seeds["sim-policy"], spy.seeds["ca"]
	if len(base) != 6 || len(ca) != 4 {
		t.Fatalf("seeds sent: base %d, adapter %d, want 6 and 4", len(base), len(ca))
	}
	seen := map[int64]bool{}
	for _, x := range base {
		seen[x] = true
	}
	if len(seen) != 6 {
		t.Errorf("base seeds %v are not distinct per question and run", base)
	}
	for _, x := range ca {
		if !seen[x] {
			t.Errorf("adapter seed %d was not the base model's", x)
		}
	}
	for _, kw := range spy.kw {
		if kw["enable_thinking"] != true {
			t.Fatalf("chat_template_kwargs = %v, want enable_thinking true", kw)
		}
	}
	for _, temps := range spy.temps {
		for _, x := range temps {
			if x != 0.6 {
				t.Fatalf("temperature %v, want the thinking preset's 0.6", x)
			}
		}
	}
	sc, err := s.Score(context.Background(), "ca", Responses(gens["ca"]))
	if err != nil {
		t.Fatal(err)
	}
	if r := sc.Results[0]; len(r.Runs) != 2 || r.N != 3 {
		t.Errorf("scored %+v, want 2 runs of 3 items", r)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Generate(cancelled, qs, GenerateOptions{Policy: client, Model: "sim-policy", Preset: bench.Qwen3NonThinking()}); err == nil {
		t.Errorf("Generate(cancelled) = nil error, want one")
	}
}

// TestIFEvalScoresResponsesAsGiven: IFEval scores a response exactly as
// generated, as the reference does; a newline before and after changes the
// lines loose mode drops and where the first paragraph starts, and so the
// verdicts, just as in the reference (worked out from evaluation_lib.py and
// instructions.py in the comments). A thinking block and the white space
// after it are not part of the response.
func TestIFEvalScoresResponsesAsGiven(t *testing.T) {
	inputs := `{"key": 1, "prompt": "Quote it.", "instruction_id_list": ["startend:quotation"], "kwargs": [{}]}
{"key": 2, "prompt": "Two paragraphs.", "instruction_id_list": ["length_constraints:nth_paragraph_first_word"], "kwargs": [{"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "alpha"}]}
`
	data := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(data, []byte(inputs), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSuite(IFEval, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	quote := "Sure:\n\"quoted answer\""
	paras := "Alpha one.\n\nBeta two."
	tests := []struct {
		name                  string
		key, response         string
		wantStrict, wantLoose bool
	}{
		// Loose drops the first line "Sure:".
		{"quotation", "1", quote, false, true},
		// Split on "\n": ["", "Sure:", "\"quoted answer\"", ""]: dropping
		// the first or last line drops an empty one; no variant is quoted.
		{"quotation, newline before and after", "1", "\n" + quote + "\n", false, false},
		{"quotation after thinking", "1", "<think>Let me see.</think>\n\n" + quote, false, true},
		{"paragraphs", "2", paras, true, true},
		// Split on "\n\n": ["\nAlpha one.", "Beta two.\n"]: paragraph 1
		// still starts with alpha once stripped.
		{"paragraphs, newline before and after", "2", "\n" + paras + "\n", true, true},
		// ["", "Alpha one.", "Beta two."]: paragraph 1 is the empty one;
		// loose, without the first line, has "Alpha one." first again.
		{"paragraphs, blank line before", "2", "\n\n" + paras, false, true},
	}
	for _, tt := range tests {
		var rs []bench.Response
		for _, key := range []string{"1", "2"} {
			r := bench.Response{ID: key, Response: "x"}
			if key == tt.key {
				r.Response = tt.response
			}
			rs = append(rs, r)
		}
		sc, err := s.Score(context.Background(), "base", rs)
		if err != nil {
			t.Fatal(err)
		}
		pr := sc.Detail.([]IFEvalRun)[0].Report.Prompts[map[string]int{"1": 0, "2": 1}[tt.key]]
		if pr.FollowAllStrict != tt.wantStrict || pr.FollowAllLoose != tt.wantLoose {
			t.Errorf("%s: strict %v loose %v, want %v %v (the reference's)", tt.name, pr.FollowAllStrict, pr.FollowAllLoose, tt.wantStrict, tt.wantLoose)
		}
	}
}

func TestIFEvalResponse(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\n answer \n", "\n answer \n"},
		{"<think>x</think>\n\nanswer\n", "answer\n"},
		{"<think>cut off", ""},
		{"no tags", "no tags"},
	}
	for _, tt := range tests {
		if got := IFEvalResponse(tt.in); got != tt.want {
			t.Errorf("IFEvalResponse(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
