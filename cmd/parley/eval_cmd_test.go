package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/rollout/single"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/sim"
	"github.com/spf13/cobra"
)

// startSim serves an in-process serve-sim: the policy and the judge on one
// server.
func startSim(t *testing.T) *httptest.Server {
	t.Helper()
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	return srv
}

// writeConfig writes a config for a test against the sim at url (the
// judge's base URL is judgeURL+"/v1") and returns its path.
func writeConfig(t *testing.T, dir, name, url, judgeURL string) string {
	t.Helper()
	cfg := fmt.Sprintf(`run: {name: evaltest, dir: %s, seed: 3}
policy: {endpoints: [%q], model: sim-policy, request_timeout: 20s}
sampling: {temperature: 1.0, top_p: 1.0, max_tokens: 48, final_max_tokens: 64}
game: {env: deliberation, deliberation: {max_rounds: 3}}
rollout: {group_size: 1, concurrency: 8}
judge: {kind: ca, base_url: %q, model: sim-judge, api_key_env: "", concurrency: 8, timeout: 20s}
log: {level: error}
`, filepath.Join(dir, "runs"), url, judgeURL+"/v1")
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// run executes a command tree with args and returns what it printed.
func run(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func quietApp() *cli { return &cli{logLevel: "error"} }

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

func TestEvalPairwise(t *testing.T) {
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, srv.URL)
	out, details := filepath.Join(dir, "res", "pairwise.json"), filepath.Join(dir, "details.jsonl")

	// The adapter is loaded through the policy client (adapter:NAME=PATH);
	// the simulator's adapter answers with more collective-agency words
	// than the base model.
	stdout, err := run(t, newEvalCmd(quietApp()), "pairwise", "--config", cfg,
		"--left", "adapter:ca-lora=/adapters/ca", "--right", "base", "--set", "conflict",
		"--runs", "2", "--prompts", "4", "--out", out, "--details", details)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("eval pairwise printed:\n%s", stdout)
	for _, want := range []string{"ca-lora (deliberation) vs. base (deliberation) on conflict resolution questions, 4 prompts",
		"a tie 0.5", "conflict_resolution", "greedy", "sampling"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	evals, err := report.ReadEvalFiles([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	if len(evals.Pairwise) != 4 {
		t.Fatalf("%d pairwise results, want 4 (2 aspects × 2 decodings)", len(evals.Pairwise))
	}
	// Recompute every run's win rate from the details: the mean outcome of
	// the run's comparisons, in percent.
	type key struct {
		aspect, decoding string
		run              int
	}
	sum, n := map[key]float64{}, map[key]int{}
	comps := readJSONL[harness.Comparison](t, details)
	if len(comps) != 2*2*2*4 {
		t.Fatalf("%d comparisons in the details, want 32", len(comps))
	}
	for _, c := range comps {
		if c.Excluded != "" {
			t.Fatalf("comparison excluded: %+v", c)
		}
		if c.LeftFinal == "" || c.RightFinal == "" || c.LeftRounds < 1 || c.LeftRounds > 3 {
			t.Errorf("comparison %+v: want both finals and 1-3 rounds", c)
		}
		k := key{c.Aspect, c.Decoding, c.Run}
		sum[k] += c.Outcome
		n[k]++
	}
	for _, r := range evals.Pairwise {
		if r.Left != "ca-lora" || r.Right != "base" || r.Set != deliberation.SetLabel || len(r.Runs) != 2 {
			t.Errorf("result %s %s: %s vs. %s on %q, %d runs", r.Aspect, r.Decoding, r.Left, r.Right, r.Set, len(r.Runs))
			continue
		}
		for i, run := range r.Runs {
			k := key{r.Aspect, r.Decoding, i}
			if want := 100 * sum[k] / float64(n[k]); math.Abs(run.WinRate-want) > 1e-9 {
				t.Errorf("%s %s run %d: win rate %v, want %v from the details", r.Aspect, r.Decoding, i, run.WinRate, want)
			}
			if run.Wins+run.Ties+run.Losses != 8 {
				t.Errorf("%s %s run %d: %d verdicts, want 8 (4 prompts in both orders)", r.Aspect, r.Decoding, i, run.Wins+run.Ties+run.Losses)
			}
			if run.RoundsLeft == nil || run.RoundsRight == nil {
				t.Errorf("%s %s run %d: rounds %v / %v, want both sides'", r.Aspect, r.Decoding, i, run.RoundsLeft, run.RoundsRight)
			}
		}
		// The simulator is deterministic under greedy decoding, so greedy
		// runs agree.
		if r.Decoding == report.DecodingGreedy && r.SD != 0 {
			t.Errorf("%s greedy: SD %v over runs, want 0", r.Aspect, r.SD)
		}
	}
	// Under greedy decoding the simulator's output depends only on the
	// prompt and the model: the adapter's finals differ from the base's.
	differ := 0
	for _, c := range comps {
		if c.Decoding == report.DecodingGreedy && c.LeftFinal != c.RightFinal {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("every greedy final of the adapter equals the base model's: the left side did not sample the adapter")
	}

	// Control: the base model against itself under greedy decoding writes
	// the same finals, so every verdict is a tie: 50 % exactly.
	ctrl := filepath.Join(dir, "control.json")
	if _, err := run(t, newEvalCmd(quietApp()), "pairwise", "--config", cfg, "--left", "base", "--right", srv.URL+"#sim-policy",
		"--right-name", "base-again", "--runs", "1", "--prompts", "3", "--decoding", "greedy", "--aspect", "ca", "--out", ctrl); err != nil {
		t.Fatal(err)
	}
	evals, err = report.ReadEvalFiles([]string{ctrl})
	if err != nil {
		t.Fatal(err)
	}
	if r := evals.Pairwise[0]; r.Mean != 50 || r.Runs[0].Ties != 6 || r.Runs[0].Wins != 0 || r.Runs[0].Losses != 0 {
		t.Errorf("base vs. base under greedy = %+v, want 6 ties and 50 %%", r)
	}

	// Multi-agent vs. single-agent on the dilemmas: the right side answers
	// each dilemma directly and has no rounds.
	out2 := filepath.Join(dir, "multi-single.json")
	if _, err := run(t, newEvalCmd(quietApp()), "pairwise", "--config", cfg,
		"--left", "adapter:ca-lora", "--right", srv.URL+"#sim-policy", "--right-name", "single-agent", "--right-game", "single",
		"--runs", "1", "--prompts", "3", "--decoding", "greedy", "--aspect", "conflict_resolution", "--out", out2); err != nil {
		t.Fatal(err)
	}
	evals, err = report.ReadEvalFiles([]string{out2})
	if err != nil {
		t.Fatal(err)
	}
	if len(evals.Pairwise) != 1 {
		t.Fatalf("%d results, want 1", len(evals.Pairwise))
	}
	r := evals.Pairwise[0]
	if r.Right != "single-agent" || r.Aspect != reward.AspectConflictResolution || len(r.Runs) != 1 ||
		r.Runs[0].RoundsLeft == nil || r.Runs[0].RoundsRight != nil || r.Runs[0].Wins+r.Runs[0].Ties+r.Runs[0].Losses != 6 {
		t.Errorf("multi vs. single = %+v", r)
	}

	// The open-ended set: single-agent games on both sides, CA only.
	out3 := filepath.Join(dir, "open.json")
	if _, err := run(t, newEvalCmd(quietApp()), "pairwise", "--config", cfg, "--left", "adapter:ca-lora", "--right", "base",
		"--set", "open-ended", "--runs", "2", "--prompts", "3", "--decoding", "sampling", "--out", out3); err != nil {
		t.Fatal(err)
	}
	evals, err = report.ReadEvalFiles([]string{out3})
	if err != nil {
		t.Fatal(err)
	}
	if len(evals.Pairwise) != 1 || evals.Pairwise[0].Aspect != report.AspectCA || evals.Pairwise[0].Set != single.SetLabel ||
		len(evals.Pairwise[0].Runs) != 2 || evals.Pairwise[0].Runs[0].RoundsLeft != nil {
		t.Errorf("open-ended = %+v", evals.Pairwise)
	}

	for name, args := range map[string][]string{
		"bad set":    {"--left", "base", "--right", "adapter:ca-lora", "--set", "easy"},
		"same names": {"--left", "base", "--right", srv.URL + "#sim-policy", "--right-name", "base"},
		"bad side":   {"--left", "ca-lora", "--right", "base"},
		"bad game":   {"--left", "base", "--right", "adapter:ca-lora", "--left-game", "chess"},
		"bad aspect": {"--left", "base", "--right", "adapter:ca-lora", "--aspect", "style"},
		"bad decode": {"--left", "base", "--right", "adapter:ca-lora", "--decoding", "beam"},
	} {
		if _, err := run(t, newEvalCmd(quietApp()), append([]string{"pairwise", "--config", cfg, "--runs", "1", "--prompts", "1"}, args...)...); err == nil {
			t.Errorf("eval pairwise (%s) = nil error, want one", name)
		}
	}
}

// Finals whose simulated CA scores are 1 to 5 (checked below), and one more.
var agreementFinals = []string{
	"Plan a: tell the police.",
	"Plan b: tell the police.",
	"Plan d: tell them together and shared.",
	"Plan a: tell them together and shared and trust and dignity.",
	"Plan a: tell them together and shared and trust and dignity and autonomy and fairness.",
	"Plan z: ask the client what they need.",
}

// fakeJudge is a second judge: an OpenAI-compatible chat endpoint scoring
// each final from a table, answering 400 for a final it does not know.
func fakeJudge(t *testing.T, scores map[string]int) *httptest.Server {
	t.Helper()
	re := regexp.MustCompile(`(?s)<solution>\s*(.*?)\s*</solution>`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		m := re.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content)
		score, ok := 0, false
		if m != nil {
			score, ok = scores[m[1]]
		}
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"content policy","type":"invalid_request_error"}}`)
			return
		}
		content, _ := json.Marshal(map[string]any{"rationale": "table", "score": score})
		resp := map[string]any{
			"id": "x", "object": "chat.completion", "model": "fake-judge",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEvalJudgeAgreement(t *testing.T) {
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, srv.URL)
	// Seven rollouts: the six finals and one that failed in generation.
	path := filepath.Join(dir, "rollouts.parquet")
	w, err := dataset.NewRolloutWriter(path, dataset.RolloutWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range append(agreementFinals, "") {
		r := dataset.Rollout{RolloutID: fmt.Sprintf("r%d", i), Env: "deliberation",
			Task:     "A therapist learns of a past crime for which another person is in jail. What now?",
			Personas: dataset.PersonaPairOf("Honor patient confidentiality.", "Pursue justice for the innocent."), Final: f}
		if f == "" {
			r.Failed, r.Error = true, "generation failed"
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Test-retest: the deterministic sim judge twice agrees throughout.
	tr := filepath.Join(dir, "retest.json")
	stdout, err := run(t, newEvalCmd(quietApp()), "judge-agreement", "--config", cfg, "--rollouts", path, "--out", tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("eval judge-agreement printed:\n%s", stdout)
	var rep harness.AgreementReport
	readJSON(t, tr, &rep)
	if rep.N != 6 || rep.Exact != 100 || rep.WithinOne != 100 || rep.Pearson == nil || *rep.Pearson != 1 ||
		rep.Kappa == nil || *rep.Kappa != 1 || rep.FailedRollouts != 1 || rep.Excluded != 0 || rep.Label != "sim-judge, test-retest" {
		t.Errorf("test-retest = %+v", rep)
	}
	// Precondition of the next case: the sim judge scores the first five
	// finals 1 to 5.
	for i := 0; i < 5; i++ {
		if it := rep.Items[i]; it.A != i+1 {
			t.Fatalf("sim judge scored %q %d, want %d (the simulator changed: pick new finals)", agreementFinals[i], it.A, i+1)
		}
	}
	if !strings.Contains(stdout, "exact agreement (%)") || !strings.Contains(stdout, "100.0") {
		t.Errorf("output:\n%s", stdout)
	}

	// A second judge that differs: B scores 1 3 3 5 4 and fails on the
	// sixth. Against A = 1 2 3 4 5: exact 2/5 = 40 %, within one 100 %,
	// Pearson 8/√88, quadratic kappa 16/19 (see harness's hand computation).
	fake := fakeJudge(t, map[string]int{agreementFinals[0]: 1, agreementFinals[1]: 3, agreementFinals[2]: 3, agreementFinals[3]: 5, agreementFinals[4]: 4})
	cfgB := writeConfig(t, dir, "judge-b.yaml", srv.URL, fake.URL)
	check := func(name string, args ...string) {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		if _, err := run(t, newEvalCmd(quietApp()), append([]string{"judge-agreement", "--config", cfg, "--rollouts", path, "--out", out}, args...)...); err != nil {
			t.Fatal(err)
		}
		var rep harness.AgreementReport
		readJSON(t, out, &rep)
		if rep.N != 5 || rep.Exact != 40 || rep.WithinOne != 100 || rep.Excluded != 1 || rep.JudgeBFailed != 1 || rep.Sampled != 6 {
			t.Errorf("%s: N %d exact %v within %v excluded %d B-failed %d sampled %d, want 5 40 100 1 1 6",
				name, rep.N, rep.Exact, rep.WithinOne, rep.Excluded, rep.JudgeBFailed, rep.Sampled)
		}
		if rep.Pearson == nil || math.Abs(*rep.Pearson-8/math.Sqrt(88)) > 1e-9 || rep.Kappa == nil || math.Abs(*rep.Kappa-16.0/19) > 1e-9 {
			t.Errorf("%s: Pearson %v kappa %v, want %v and %v", name, rep.Pearson, rep.Kappa, 8/math.Sqrt(88), 16.0/19)
		}
		if want := [][]int{{1, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}}; fmt.Sprint(rep.Confusion) != fmt.Sprint(want) {
			t.Errorf("%s: confusion %v, want %v", name, rep.Confusion, want)
		}
		evals, err := report.ReadEvalFiles([]string{out})
		if err != nil || len(evals.Agreement) != 1 || evals.Agreement[0].Exact != 40 {
			t.Errorf("%s: report reads %+v, %v", name, evals, err)
		}
	}
	check("config-b", "--judge-b-config", cfgB)
	check("overrides", "--judge-b-base-url", fake.URL+"/v1", "--judge-b-model", "fake-judge", "--label", "sim vs. fake")

	// A balanced sample of 3 by judge A's levels.
	out := filepath.Join(dir, "sample.json")
	if _, err := run(t, newEvalCmd(quietApp()), "judge-agreement", "--config", cfg, "--rollouts", path, "--sample", "3", "--out", out); err != nil {
		t.Fatal(err)
	}
	readJSON(t, out, &rep)
	if rep.Sampled != 3 || rep.SampleBy != harness.SampleByJudgeA || rep.N != 3 {
		t.Errorf("sample: sampled %d by %q, N %d; want 3 by judge A, 3", rep.Sampled, rep.SampleBy, rep.N)
	}
	if _, err := run(t, newEvalCmd(quietApp()), "judge-agreement", "--config", cfg); err == nil {
		t.Errorf("judge-agreement without --rollouts = nil error, want one")
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
