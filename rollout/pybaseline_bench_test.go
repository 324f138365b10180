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
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
)

// pyBaseline is scripts/bench_orchestrator_py.py: the Python asyncio
// orchestrator that DESIGN.md ("Scale") sizes parley's CPU against.
const pyBaseline = "../scripts/bench_orchestrator_py.py"

// pySummary is the JSON line the Python orchestrator prints.
type pySummary struct {
	Rollouts         int      `json:"rollouts"`
	Failed           int      `json:"failed"`
	Agreed           int      `json:"agreed"`
	Requests         int64    `json:"requests"`
	PromptTokens     int64    `json:"prompt_tokens"`
	SampledTokens    int64    `json:"sampled_tokens"`
	PrefixBreaks     int64    `json:"prefix_breaks"`
	Sequences        int64    `json:"sequences"`
	TrainerTokens    int64    `json:"trainer_tokens"`
	PromptTokensSent int64    `json:"prompt_tokens_sent"`
	ClosedTurns      int64    `json:"closed_turns"`
	ElapsedS         float64  `json:"elapsed_s"`
	CPUS             float64  `json:"cpu_s"`
	Errors           []string `json:"errors"`
}

// counts are the work counts a summary shares with parley's.
func (s pySummary) counts() workCounts {
	return workCounts{s.Rollouts, s.Agreed, s.Requests, s.PromptTokens, s.SampledTokens, s.PrefixBreaks, s.Sequences,
		s.TrainerTokens, s.PromptTokensSent, s.ClosedTurns}
}

// workCounts is the work of a run of rollouts, as both orchestrators count
// it.
type workCounts struct {
	Rollouts, Agreed                                               int
	Requests, PromptTokens, SampledTokens, PrefixBreaks, Sequences int64
	TrainerTokens, PromptTokensSent, ClosedTurns                   int64
}

func parleyCounts(s rollout.Summary) workCounts {
	return workCounts{s.Rollouts, s.Agreed, s.Requests, s.PromptTokens, s.SampledTokens, s.PrefixBreaks, s.Sequences,
		s.TrainerTokens, s.PromptTokensSent, s.ClosedTurns}
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

// pyBench is one workload of BenchmarkPythonAsyncioBaseline, the same as a
// parley benchmark's.
type pyBench struct {
	name, client string
	sim          simConfig
	history      rollout.HistoryMode
	kwargs       string
}

// BenchmarkPythonAsyncioBaseline runs the Python asyncio orchestrator on
// exactly the work of parley's benchmarks and reports its CPU per request
// beside their parley-cpu-µs/req. Each runs 64 prompts × 8 deliberation
// rollouts, 256 in flight, seed 1, against serve-sim in a child process
// with no latency:
//
//   - httpx, httpx2, aiohttp: the work of BenchmarkRolloutsZeroLatency
//     (ChatML template, history tokens) on httpx 0.28 (plain asyncio),
//     httpx2 (pydantic's fork, whose pool does not rescan every connection
//     for each request) and uvloop + aiohttp + orjson, the fastest common
//     asyncio stack;
//   - aiohttp-qwen3/tokens and aiohttp-qwen3/rerender: the work of
//     BenchmarkRolloutsQwen3 (Qwen3's template, thinking off, every
//     dialogue its 5 rounds) in both history modes.
//
// Needs PARLEY_PYTHON (make bench sets it).
func BenchmarkPythonAsyncioBaseline(b *testing.B) {
	py := os.Getenv("PARLEY_PYTHON")
	if py == "" {
		b.Skip("PARLEY_PYTHON unset: no Python environment for the asyncio baseline (make bench sets it)")
	}
	benches := []pyBench{
		{name: "httpx", client: "httpx", history: rollout.HistoryTokens},
		{name: "httpx2", client: "httpx2", history: rollout.HistoryTokens},
		{name: "aiohttp", client: "aiohttp", history: rollout.HistoryTokens},
	}
	for _, h := range []rollout.HistoryMode{rollout.HistoryTokens, rollout.HistoryRerender} {
		benches = append(benches, pyBench{name: "aiohttp-qwen3/" + string(h), client: "aiohttp", sim: qwen3FullRounds, history: h,
			kwargs: `{"enable_thinking": false}`})
	}
	for _, pb := range benches {
		b.Run(pb.name, func(b *testing.B) {
			ps := samplePrompts(b, 64)
			url, stop := simChild(b, pb.sim)
			var rollouts int
			var sum pySummary
			var elapsed, cpu float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				extra := []string{"--concurrency", "256", "--seed", "1", "--client", pb.client, "--history", string(pb.history)}
				if pb.kwargs != "" {
					extra = append(extra, "--chat-template-kwargs", pb.kwargs)
				}
				s := runPyBaseline(b, py, url, ps, 8, extra...)
				rollouts += s.Rollouts
				sum.Requests += s.Requests
				sum.TrainerTokens += s.TrainerTokens
				sum.PromptTokensSent += s.PromptTokensSent
				elapsed += s.ElapsedS
				cpu += s.CPUS
			}
			b.StopTimer()
			simCPU := stop()
			n := float64(b.N)
			b.ReportMetric(float64(rollouts)/elapsed, "rollouts/s")
			b.ReportMetric(float64(sum.Requests)/elapsed, "req/s")
			b.ReportMetric(float64(sum.Requests)/float64(rollouts), "req/rollout")
			b.ReportMetric(cpu*1e6/float64(sum.Requests), "py-cpu-µs/req")
			b.ReportMetric(float64(simCPU.Microseconds())/float64(sum.Requests), "sim-cpu-µs/req")
			b.ReportMetric(float64(sum.TrainerTokens)/n, "trainer-tokens/step")
			b.ReportMetric(float64(sum.PromptTokensSent)/n, "prompt-tokens-sent/step")
		})
	}
}

// TestPythonBaselineMatchesParley keeps the baseline honest: against one
// serve-sim, with the same prompts and seeds, the Python orchestrator must
// record exactly parley's rollouts (turns, agreement, final, personas,
// system prompts, roles, every token, mask and logprob of every training
// sequence, request and token counts), and so does the same work per
// rollout, in both history modes, on each client stack. The cases make the
// modes differ: on Qwen3's template rerender breaks the prefix and tokens
// does not; short turns are cut before their end of turn and closed by hand.
func TestPythonBaselineMatchesParley(t *testing.T) {
	py := os.Getenv("PARLEY_PYTHON")
	if py == "" {
		t.Skip("PARLEY_PYTHON unset: skipping the Python baseline cross-check (make test sets it)")
	}
	for _, tc := range []struct {
		name       string
		template   string
		history    rollout.HistoryMode
		thinking   bool
		turnTokens int
		client     string
		// what the case must show: prefix breaks, closed turns
		breaks, closed bool
	}{
		{"chatml/tokens/httpx", sim.TemplateChatML, rollout.HistoryTokens, false, 96, "httpx", false, false},
		{"chatml/rerender/httpx2", sim.TemplateChatML, rollout.HistoryRerender, false, 96, "httpx2", false, false},
		{"qwen3/tokens/aiohttp", sim.TemplateQwen3, rollout.HistoryTokens, false, 96, "aiohttp", false, false},
		{"qwen3/rerender/aiohttp", sim.TemplateQwen3, rollout.HistoryRerender, false, 96, "aiohttp", true, false},
		{"qwen3-thinking/tokens/aiohttp", sim.TemplateQwen3, rollout.HistoryTokens, true, 160, "aiohttp", false, false},
		{"qwen3-cut-turns/tokens/aiohttp", sim.TemplateQwen3, rollout.HistoryTokens, false, 30, "aiohttp", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := sim.New(sim.Options{Template: tc.template})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()

			prompts := samplePrompts(t, 8)
			kwargs := map[string]any{"enable_thinking": tc.thinking}
			want, wantSum := runGame(t, game{url: ts.URL, model: sim.DefaultModel, history: tc.history, kwargs: kwargs,
				turnTokens: tc.turnTokens, finalTokens: 128, concurrency: 256}, prompts, 4, llm.Options{})
			if wantSum.Failed != 0 {
				t.Fatalf("parley: %d rollouts failed: %v", wantSum.Failed, wantSum.FirstErr)
			}
			kw, _ := json.Marshal(kwargs)
			dump := filepath.Join(t.TempDir(), "py.jsonl")
			got := runPyBaseline(t, py, ts.URL, prompts, 4, "--seed", "42", "--run-id", "t", "--client", tc.client,
				"--history", string(tc.history), "--turn-tokens", fmt.Sprint(tc.turnTokens), "--chat-template-kwargs", string(kw), "--dump", dump)

			if g, w := got.counts(), parleyCounts(wantSum); g != w {
				t.Errorf("python's work = %+v\nparley's      = %+v", g, w)
			}
			if (wantSum.PrefixBreaks > 0) != tc.breaks || (wantSum.ClosedTurns > 0) != tc.closed {
				t.Errorf("%d prefix breaks, %d closed turns; want some breaks: %v, some closed turns: %v",
					wantSum.PrefixBreaks, wantSum.ClosedTurns, tc.breaks, tc.closed)
			}
			byID := readPyDump(t, dump)
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
				// The Python orchestrator records no weight versions: the
				// base model sampled every token here, version 0 (checked),
				// which leaves parley's per-token versions out of the
				// comparison.
				for i := range w.Sequences {
					sq := &w.Sequences[i]
					if len(sq.Versions) != len(sq.InputIDs) || slices.ContainsFunc(sq.Versions, func(v int32) bool { return v != 0 }) {
						t.Errorf("rollout %s sequence %d: versions %v, want %d zeros", w.RolloutID, i, sq.Versions, len(sq.InputIDs))
					}
					sq.Versions = nil
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("rollout %s differs in %v:\npython = %s\nparley = %s", w.RolloutID, diffFields(g, w), brief(g), brief(w))
				}
			}
		})
	}
}

// readPyDump reads the Python orchestrator's rollouts by id.
func readPyDump(t *testing.T, path string) map[string]dataset.Rollout {
	t.Helper()
	f, err := os.Open(path)
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
	return byID
}

// brief is a rollout's summary for failure messages.
func brief(r dataset.Rollout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d agreed %v rounds %d requests %d prompt %d sampled %d breaks %d turns %d:", r.Seed, r.Agreed, r.Rounds,
		r.Requests, r.PromptTokens, r.SampledTokens, r.PrefixBreaks, len(r.Turns))
	for _, s := range r.Sequences {
		fmt.Fprintf(&b, " %s/%s %d tokens", s.Role, s.Kind, len(s.InputIDs))
	}
	return b.String()
}

// diffFields names the fields of two structs of one type that differ.
func diffFields(a, b any) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := 0; i < va.NumField(); i++ {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}
