package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
)

// Synthetic benchmark fixtures (no real GPQA text is ever committed).
const (
	gpqaFixture   = "../../eval/harness/testdata/gpqa_synthetic.csv"
	aimeFixture   = "../../eval/harness/testdata/aime_synthetic.jsonl"
	ifevalFixture = "../../eval/harness/testdata/ifeval_inputs.jsonl"
)

func benchResults(t *testing.T, path string) map[string]report.BenchResult {
	t.Helper()
	evals, err := report.ReadEvalFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]report.BenchResult{}
	for _, r := range evals.Bench {
		out[r.Benchmark+"/"+r.Model] = r
	}
	return out
}

func TestBenchGPQA(t *testing.T) {
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, srv.URL)
	out := filepath.Join(dir, "bench")

	// Online: base and adapter side by side, two runs. The simulator's
	// answers are mostly wrong; this checks the plumbing.
	stdout, err := run(t, newBenchCmd(quietApp()), "gpqa", "--config", cfg, "--data", gpqaFixture,
		"--runs", "2", "--adapter", "ca-lora=/adapters/ca", "--max-tokens", "64", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bench gpqa printed:\n%s", stdout)
	res := benchResults(t, filepath.Join(out, "gpqa_diamond.json"))
	for _, model := range []string{"base", "ca-lora"} {
		r, ok := res["gpqa_diamond/"+model]
		if !ok || r.N != 4 || len(r.Runs) != 2 {
			t.Fatalf("result of %s = %+v, want 4 items and 2 runs", model, r)
		}
		gens := readJSONL[harness.Generation](t, filepath.Join(out, "gpqa_diamond-"+model+".responses.jsonl"))
		if len(gens) != 8 {
			t.Fatalf("%s: %d responses, want 8", model, len(gens))
		}
		for _, g := range gens {
			if g.Error != "" || g.Response.Response == "" || g.Expected == "" || g.Tokens == 0 || g.Tokens > 64 {
				t.Errorf("%s response %+v", model, g)
			}
		}
		// Offline re-scoring of the written responses gives the same result.
		again := filepath.Join(dir, "again-"+model)
		if _, err := run(t, newBenchCmd(quietApp()), "gpqa", "--config", cfg, "--data", gpqaFixture,
			"--responses", model+"="+filepath.Join(out, "gpqa_diamond-"+model+".responses.jsonl"), "--out", again); err != nil {
			t.Fatal(err)
		}
		if r2 := benchResults(t, filepath.Join(again, "gpqa_diamond.json"))["gpqa_diamond/"+model]; r2.Mean != r.Mean || r2.SD != r.SD || len(r2.Runs) != 2 {
			t.Errorf("%s re-scored offline: %v ± %v, online %v ± %v", model, r2.Mean, r2.SD, r.Mean, r.SD)
		}
	}
	if !strings.Contains(stdout, "gpqa_diamond (4)") || strings.Index(stdout, "base") > strings.Index(stdout, "ca-lora") {
		t.Errorf("table:\n%s", stdout)
	}
	// What parley writes beside the responses holds ids and letters, never
	// question text.
	for _, f := range []string{"gpqa_diamond.json", "gpqa_diamond-base.scores.json", "gpqa_diamond-ca-lora.scores.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "Synthetic item") {
			t.Errorf("%s holds question text", f)
		}
	}

	// Offline, with known right answers (the config's run.seed 3 shuffles
	// the choices): run 0 all right (100 %), run 1 items 1 and 2 right
	// (50 %): 75 ± 35.36.
	items, err := bench.LoadGPQA(gpqaFixture)
	if err != nil {
		t.Fatal(err)
	}
	var rs []bench.Response
	for run := 0; run < 2; run++ {
		for i, it := range items {
			letter := bench.ShuffleGPQA(it, 3, run).Correct
			if run == 1 && i >= 2 {
				letter = map[string]string{"A": "B", "B": "C", "C": "D", "D": "A"}[letter]
			}
			rs = append(rs, bench.Response{ID: it.ID, Run: run, Response: "Reasoning.\nAnswer: " + letter})
		}
	}
	fixture := filepath.Join(dir, "known.jsonl")
	if err := bench.WriteResponses(fixture, rs); err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(dir, "known")
	if _, err := run(t, newBenchCmd(quietApp()), "gpqa", "--config", cfg, "--data", gpqaFixture, "--responses", fixture, "--out", known); err != nil {
		t.Fatal(err)
	}
	r := benchResults(t, filepath.Join(known, "gpqa_diamond.json"))["gpqa_diamond/base"]
	if len(r.Runs) != 2 || r.Runs[0].Accuracy != 100 || r.Runs[1].Accuracy != 50 || r.Mean != 75 || math.Abs(r.SD-math.Sqrt(1250)) > 1e-9 {
		t.Errorf("known answers: %+v, want runs 100 and 50, 75 ± 35.36", r)
	}
}

func TestBenchAIMEAndIFEval(t *testing.T) {
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, srv.URL)

	// AIME offline: s1 right, s2 right (099 = 99), s3 wrong: 66.7 %.
	fixture := filepath.Join(dir, "aime.jsonl")
	if err := bench.WriteResponses(fixture, []bench.Response{
		{ID: "s1", Response: "<think>\\boxed{41}</think>So \\boxed{42}."},
		{ID: "s2", Response: "\\boxed{99}"},
		{ID: "s3", Response: "\\boxed{255}"},
	}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "aime")
	if _, err := run(t, newBenchCmd(quietApp()), "aime24", "--config", cfg, "--data", aimeFixture, "--responses", "ca="+fixture, "--out", out); err != nil {
		t.Fatal(err)
	}
	r := benchResults(t, filepath.Join(out, "aime2024.json"))["aime2024/ca"]
	if len(r.Runs) != 1 || math.Abs(r.Mean-200.0/3) > 1e-9 || r.N != 3 {
		t.Errorf("AIME offline = %+v, want 66.67 over 3 items", r)
	}

	// AIME online in thinking mode, and IFEval online: plumbing.
	if _, err := run(t, newBenchCmd(quietApp()), "aime25", "--config", cfg, "--data", aimeFixture, "--runs", "1",
		"--mode", "thinking", "--max-tokens", "32", "--out", out); err != nil {
		t.Fatal(err)
	}
	if r := benchResults(t, filepath.Join(out, "aime2025.json"))["aime2025/base"]; len(r.Runs) != 1 || r.N != 3 {
		t.Errorf("AIME online = %+v", r)
	}
	out = filepath.Join(dir, "ifeval")
	stdout, err := run(t, newBenchCmd(quietApp()), "ifeval", "--config", cfg, "--data", ifevalFixture, "--runs", "2", "--max-tokens", "32", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	res := benchResults(t, filepath.Join(out, "ifeval.json"))
	for _, name := range []string{harness.IFEval, harness.IFEvalInstructionStrict, harness.IFEvalPromptLoose, harness.IFEvalInstructionLoose} {
		if r, ok := res[name+"/base"]; !ok || len(r.Runs) != 2 {
			t.Errorf("IFEval %s = %+v, want 2 runs", name, r)
		}
	}
	if !strings.Contains(stdout, "ifeval (3)") || !strings.Contains(stdout, "ifeval_instruction_strict (4)") {
		t.Errorf("table:\n%s", stdout)
	}
	// Re-scoring IFEval offline matches.
	again := filepath.Join(dir, "ifeval-again")
	if _, err := run(t, newBenchCmd(quietApp()), "ifeval", "--data", ifevalFixture,
		"--responses", filepath.Join(out, "ifeval-base.responses.jsonl"), "--out", again); err != nil {
		t.Fatal(err)
	}
	if r2 := benchResults(t, filepath.Join(again, "ifeval.json"))["ifeval/base"]; r2.Mean != res["ifeval/base"].Mean {
		t.Errorf("IFEval offline %v, online %v", r2.Mean, res["ifeval/base"].Mean)
	}

	for name, args := range map[string][]string{
		"unknown benchmark": {"mmlu", "--data", aimeFixture},
		"no data":           {"aime24"},
		"bad mode":          {"aime24", "--data", aimeFixture, "--mode", "dreaming"},
		"no args":           {},
		"missing responses": {"aime24", "--data", aimeFixture, "--responses", filepath.Join(dir, "none.jsonl")},
	} {
		if _, err := run(t, newBenchCmd(quietApp()), append(args, "--config", cfg, "--out", filepath.Join(dir, "x"))...); err == nil {
			t.Errorf("bench (%s) = nil error, want one", name)
		}
	}
}

// --scorer reads the answers by a reference's rules: the results and the
// table name it, the files are named for it beside parley's, and a
// response cut off while thinking is counted and said.
func TestBenchScorers(t *testing.T) {
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, srv.URL)
	items, err := bench.LoadGPQA(gpqaFixture)
	if err != nil {
		t.Fatal(err)
	}
	// Item 1 in lm-eval's strict form, item 2 in simple-evals' (which
	// strict-match misses), item 3 cut off while thinking, item 4 wrong.
	var rs []bench.Response
	for i, it := range items {
		letter := bench.ShuffleGPQA(it, 3, 0).Correct
		text := []string{"Reasoning.\nThe answer is (" + letter + ").", "Reasoning.\nAnswer: " + letter,
			"<think>The answer is (" + letter + ").", "The answer is (" + map[string]string{"A": "B", "B": "C", "C": "D", "D": "A"}[letter] + ")."}[i]
		rs = append(rs, bench.Response{ID: it.ID, Run: 0, Response: text})
	}
	fixture := filepath.Join(dir, "responses.jsonl")
	if err := bench.WriteResponses(fixture, rs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, tt := range []struct {
		scorer, file string
		mean         float64
	}{
		{"", "gpqa_diamond.json", 50},                                  // parley: items 1 and 2; 3 has no answer
		{"lm-eval-strict", "gpqa_diamond.lm-eval-strict.json", 50},     // items 1 and 3 (the thinking read whole)
		{"lm-eval-flexible", "gpqa_diamond.lm-eval-flexible.json", 75}, // items 1, 2 (": X") and 3
		{"simple-evals", "gpqa_diamond.simple-evals.json", 25},         // item 2
	} {
		args := []string{"gpqa", "--config", cfg, "--data", gpqaFixture, "--responses", fixture, "--out", out}
		if tt.scorer != "" {
			args = append(args, "--scorer", tt.scorer)
		}
		stdout, err := run(t, newBenchCmd(quietApp()), args...)
		if err != nil {
			t.Fatalf("--scorer %q: %v", tt.scorer, err)
		}
		want := tt.scorer
		if want == "" {
			want = bench.ScorerParley
		}
		r := benchResults(t, filepath.Join(out, tt.file))["gpqa_diamond/base"]
		if r.Scorer != want || r.Mean != tt.mean || r.CutOff != 1 {
			t.Errorf("--scorer %q: %s = scorer %q, mean %v, cut off %d; want %s, %v, 1", tt.scorer, tt.file, r.Scorer, r.Mean, r.CutOff, want, tt.mean)
		}
		row := "gpqa_diamond [" + want + "] (4)"
		if tt.scorer == "" {
			row = "gpqa_diamond (4)"
		}
		if !strings.Contains(stdout, row) || !strings.Contains(stdout, "Scorer "+want+": ") ||
			!strings.Contains(stdout, "1 response ends inside an unclosed thinking block") {
			t.Errorf("--scorer %q: table:\n%s", tt.scorer, stdout)
		}
		scores := filepath.Join(out, "gpqa_diamond-base.scores.json")
		if tt.scorer != "" {
			scores = filepath.Join(out, "gpqa_diamond-base."+tt.scorer+".scores.json")
		}
		if _, err := os.Stat(scores); err != nil {
			t.Errorf("--scorer %q: %v", tt.scorer, err)
		}
	}

	for name, tt := range map[string]struct {
		args []string
		want string
	}{
		"a scorer of another benchmark": {[]string{"gpqa", "--data", gpqaFixture, "--responses", fixture, "--scorer", "math-verify"}, "want one of parley, lm-eval-strict"},
		"an unknown scorer":             {[]string{"aime24", "--data", aimeFixture, "--responses", fixture, "--scorer", "lm-eval"}, `no scorer "lm-eval" (want one of parley, math-verify)`},
		"ifeval's one scorer":           {[]string{"ifeval", "--data", ifevalFixture, "--scorer", "simple-evals"}, "ifeval has one scorer"},
		"no python":                     {[]string{"aime24", "--data", aimeFixture, "--responses", fixture, "--scorer", "math-verify", "--python", filepath.Join(dir, "no-python")}, "pass --python PATH"},
	} {
		_, err := run(t, newBenchCmd(quietApp()), append(tt.args, "--config", cfg, "--out", filepath.Join(dir, "x"))...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("bench (%s) error = %v, want it to contain %q", name, err, tt.want)
		}
	}
}

// --scorer math-verify runs the package in parley's Python environment.
func TestBenchMathVerify(t *testing.T) {
	python := os.Getenv("PARLEY_PYTHON")
	if python == "" {
		t.Skip("PARLEY_PYTHON is not set (make test sets it to the venv's python, which has math-verify)")
	}
	scripts, err := filepath.Abs("../../scripts")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", scripts) // this tree's parley_tools
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, srv.URL)
	fixture := filepath.Join(dir, "aime.jsonl")
	// math-verify reads \frac{84}{2} as 42 and the unboxed 99; not 255.
	if err := bench.WriteResponses(fixture, []bench.Response{
		{ID: "s1", Response: "So \\boxed{\\frac{84}{2}}."},
		{ID: "s2", Response: "The answer is 99."},
		{ID: "s3", Response: "\\boxed{255}"},
	}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	stdout, err := run(t, newBenchCmd(quietApp()), "aime24", "--config", cfg, "--data", aimeFixture, "--responses", fixture,
		"--scorer", "math-verify", "--python", python, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	r := benchResults(t, filepath.Join(out, "aime2024.math-verify.json"))["aime2024/base"]
	if r.Scorer != bench.ScorerMathVerify || math.Abs(r.Mean-200.0/3) > 1e-9 {
		t.Errorf("math-verify = %+v, want 66.67 %%", r)
	}
	if !strings.Contains(stdout, "aime2024 [math-verify] (3)") || !strings.Contains(stdout, "Scorer math-verify: Hugging Face math-verify") {
		t.Errorf("table:\n%s", stdout)
	}
}
