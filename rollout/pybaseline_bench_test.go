package rollout_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/sim"
)

// pyBaseline is scripts/bench_orchestrator_py.py: the Python asyncio + httpx
// orchestrator that DESIGN.md ("Scale") sizes parley's CPU against.
const pyBaseline = "../scripts/bench_orchestrator_py.py"

// pySummary is the JSON line the Python orchestrator prints.
type pySummary struct {
	Rollouts      int      `json:"rollouts"`
	Failed        int      `json:"failed"`
	Agreed        int      `json:"agreed"`
	Requests      int64    `json:"requests"`
	PromptTokens  int64    `json:"prompt_tokens"`
	SampledTokens int64    `json:"sampled_tokens"`
	PrefixBreaks  int64    `json:"prefix_breaks"`
	ElapsedS      float64  `json:"elapsed_s"`
	CPUS          float64  `json:"cpu_s"`
	Errors        []string `json:"errors"`
}

// runPyBaseline runs the Python orchestrator against url for prompts × group
// rollouts (the prompts passed by id, in order, so that both orchestrators
// play the same rows with the same seeds) and returns its summary.
func runPyBaseline(tb testing.TB, py, url string, prompts []dataset.Prompt, group int, extra ...string) pySummary {
	tb.Helper()
	ids := make([]string, len(prompts))
	for i, p := range prompts {
		ids[i] = p.ID
	}
	args := append([]string{pyBaseline, "--url", url, "--model", sim.DefaultModel,
		"--prompt-ids", strings.Join(ids, ","), "--group", fmt.Sprint(group)}, extra...)
	cmd := exec.Command(py, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var sum pySummary
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &sum); err != nil || jerr != nil {
		tb.Fatalf("%s %s: %v, %v\nstdout: %s\nstderr: %s", py, strings.Join(args, " "), err, jerr, stdout.Bytes(), stderr.Bytes())
	}
	if sum.Failed > 0 {
		tb.Fatalf("python baseline: %d rollouts failed: %v", sum.Failed, sum.Errors)
	}
	return sum
}

// BenchmarkPythonAsyncioBaseline runs the Python asyncio orchestrator on
// exactly the work of BenchmarkRolloutsZeroLatency (64 prompts × 8
// deliberation rollouts, 256 in flight, seed 1, serve-sim in a child
// process with no latency) and reports its CPU per request beside parley's
// parley-cpu-µs/req. Sub-benchmarks: httpx (0.28, DESIGN.md's baseline)
// and httpx2 (pydantic's fork, whose connection pool does not rescan every
// connection for each request). Needs PARLEY_PYTHON (make bench sets it).
func BenchmarkPythonAsyncioBaseline(b *testing.B) {
	py := os.Getenv("PARLEY_PYTHON")
	if py == "" {
		b.Skip("PARLEY_PYTHON unset: no Python environment for the asyncio baseline (make bench sets it)")
	}
	for _, client := range []string{"httpx", "httpx2"} {
		b.Run(client, func(b *testing.B) {
			ps := samplePrompts(b, 64)
			url, stop := simChild(b, 0)
			var rollouts int
			var requests int64
			var elapsed, cpu float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sum := runPyBaseline(b, py, url, ps, 8, "--concurrency", "256", "--seed", "1", "--client", client)
				rollouts += sum.Rollouts
				requests += sum.Requests
				elapsed += sum.ElapsedS
				cpu += sum.CPUS
			}
			b.StopTimer()
			simCPU := stop()
			b.ReportMetric(float64(rollouts)/elapsed, "rollouts/s")
			b.ReportMetric(float64(requests)/elapsed, "req/s")
			b.ReportMetric(float64(requests)/float64(rollouts), "req/rollout")
			b.ReportMetric(cpu*1e6/float64(requests), "py-cpu-µs/req")
			b.ReportMetric(float64(simCPU.Microseconds())/float64(requests), "sim-cpu-µs/req")
		})
	}
}

// TestPythonBaselineMatchesParley keeps the baseline honest: against one
// serve-sim, with the same prompts and seeds, the Python orchestrator must
// record exactly parley's rollouts (turns, agreement, final, every token,
// mask and logprob of every training sequence, request and token counts),
// and so does the same work per rollout.
func TestPythonBaselineMatchesParley(t *testing.T) {
	py := os.Getenv("PARLEY_PYTHON")
	if py == "" {
		t.Skip("PARLEY_PYTHON unset: skipping the Python baseline cross-check (make test sets it)")
	}
	srv, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	prompts := samplePrompts(t, 8)
	// runSim plays seed 42, run id "t", enable_thinking false.
	want, wantSum := runSim(t, ts.URL, prompts, 4, llm.Options{})
	dump := filepath.Join(t.TempDir(), "py.jsonl")
	got := runPyBaseline(t, py, ts.URL, prompts, 4, "--seed", "42", "--run-id", "t",
		"--chat-template-kwargs", `{"enable_thinking": false}`, "--dump", dump)

	if got.Rollouts != len(want) || got.Requests != wantSum.Requests || got.PromptTokens != wantSum.PromptTokens ||
		got.SampledTokens != wantSum.SampledTokens || got.Agreed != wantSum.Agreed || got.PrefixBreaks != wantSum.PrefixBreaks {
		t.Errorf("python summary = %d rollouts, %d requests, %d prompt / %d sampled tokens, %d agreed, %d prefix breaks; "+
			"parley's = %d, %d, %d / %d, %d, %d", got.Rollouts, got.Requests, got.PromptTokens, got.SampledTokens, got.Agreed, got.PrefixBreaks,
			len(want), wantSum.Requests, wantSum.PromptTokens, wantSum.SampledTokens, wantSum.Agreed, wantSum.PrefixBreaks)
	}

	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byID := map[string]dataset.Rollout{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r dataset.Rollout
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("decoding the python dump: %v", err)
		}
		byID[r.RolloutID] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(byID) != len(want) {
		t.Fatalf("python dumped %d rollouts, parley played %d", len(byID), len(want))
	}
	for _, w := range want {
		g, ok := byID[w.RolloutID]
		if !ok {
			t.Fatalf("python has no rollout %s", w.RolloutID)
		}
		g.StartedUnixMS, g.RolloutMS = 0, 0
		w.StartedUnixMS, w.RolloutMS = 0, 0
		if !reflect.DeepEqual(g, w) {
			t.Errorf("rollout %s: python = %+v\nparley = %+v", w.RolloutID, brief(g), brief(w))
		}
	}
}

// brief is a rollout's summary for failure messages.
func brief(r dataset.Rollout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d agreed %v rounds %d requests %d prompt %d sampled %d turns %d:", r.Seed, r.Agreed, r.Rounds, r.Requests, r.PromptTokens, r.SampledTokens, len(r.Turns))
	for _, s := range r.Sequences {
		fmt.Fprintf(&b, " %s/%s %d tokens", s.Role, s.Kind, len(s.InputIDs))
	}
	return b.String()
}
