package rollout_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
)

// recorder is HTTP middleware in front of serve-sim (or a real vLLM) that
// keeps, for each successful response, what the server rendered
// (/tokenize) and what it sampled (/v1/completions, by prompt), so that
// trajectories can be checked against the server's own words rather than
// the client's.
type recorder struct {
	mu        sync.Mutex
	renders   map[[32]byte]bool      // hash of a /tokenize response's tokens
	completes map[[32]byte][][]int32 // hash of a prompt → every token_ids sampled for it
	// byTail holds every /tokenize response by the hash of its last
	// tailLen tokens, to find the rendering a bridge was cut from.
	byTail  map[[32]byte][][]int32
	prompts [][]int32 // every completion prompt, in arrival order
}

const tailLen = 8

func tailKey(ids []int32) [32]byte { return hashIDs(ids[max(0, len(ids)-tailLen):]) }

// isRenderSuffix reports whether run ends some /tokenize rendering.
func (rec *recorder) isRenderSuffix(run []int32) bool {
	if len(run) < tailLen {
		// short runs: any rendering with the same tail
		for _, rs := range rec.byTail {
			for _, r := range rs {
				if len(r) >= len(run) && slices.Equal(r[len(r)-len(run):], run) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range rec.byTail[tailKey(run)] {
		if len(r) >= len(run) && slices.Equal(r[len(r)-len(run):], run) {
			return true
		}
	}
	return false
}

func hashIDs(ids []int32) [32]byte {
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	return sha256.Sum256(b)
}

type captureWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (c *captureWriter) WriteHeader(s int) { c.status = s; c.ResponseWriter.WriteHeader(s) }
func (c *captureWriter) Write(p []byte) (int, error) {
	c.buf.Write(p)
	return c.ResponseWriter.Write(p)
}

// Hijack lets the simulator drop connections through the middleware.
func (c *captureWriter) Hijack() (conn any, rw any, err error) {
	return nil, nil, fmt.Errorf("no hijack")
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tokenize" && r.URL.Path != "/v1/completions" {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		cw := &captureWriter{ResponseWriter: w, status: 200}
		h.ServeHTTP(cw, r)
		if cw.status != 200 {
			return
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		switch r.URL.Path {
		case "/tokenize":
			var resp struct{ Tokens []int32 }
			if json.Unmarshal(cw.buf.Bytes(), &resp) == nil {
				rec.renders[hashIDs(resp.Tokens)] = true
				k := tailKey(resp.Tokens)
				rec.byTail[k] = append(rec.byTail[k], resp.Tokens)
			}
		case "/v1/completions":
			var req struct{ Prompt []int32 }
			var resp struct {
				Choices []struct {
					TokenIDs []int32 `json:"token_ids"`
				}
			}
			if json.Unmarshal(body, &req) == nil && json.Unmarshal(cw.buf.Bytes(), &resp) == nil && len(resp.Choices) == 1 {
				k := hashIDs(req.Prompt)
				rec.completes[k] = append(rec.completes[k], resp.Choices[0].TokenIDs)
				rec.prompts = append(rec.prompts, req.Prompt)
			}
		}
	})
}

func newRecorder() *recorder {
	return &recorder{renders: map[[32]byte]bool{}, completes: map[[32]byte][][]int32{}, byTail: map[[32]byte][][]int32{}}
}

// checkTrajectories checks every training sequence of rs against what the
// server said: every mask-1 run is exactly a token_ids the server returned
// for exactly the tokens before it; the first mask-0 run of a sequence is a
// /tokenize rendering; every later mask-0 run is, in rerender mode, the
// end of a rendering of everything before it, and in tokens mode a bridge:
// the end of a /tokenize rendering cut right after an end-of-turn token
// eot, which is the last sampled token, or else the run's first token (a
// cut turn closed by hand). It returns the numbers of masked and unmasked
// runs and of closed turns.
func checkTrajectories(t *testing.T, rec *recorder, rs []dataset.Rollout, history rollout.HistoryMode, eot int32) (masked, unmasked, closed int) {
	t.Helper()
	for _, r := range rs {
		for _, s := range r.Sequences {
			if len(s.InputIDs) != len(s.LossMask) || len(s.InputIDs) != len(s.Logprobs) {
				t.Fatalf("%s/%s: unequal lengths", r.RolloutID, s.Role)
			}
			// walk the runs of equal mask
			for start := 0; start < len(s.LossMask); {
				end := start
				for end < len(s.LossMask) && s.LossMask[end] == s.LossMask[start] {
					end++
				}
				if s.LossMask[start] == 1 {
					masked++
					sampled, ok := rec.completes[hashIDs(s.InputIDs[:start])]
					if !ok {
						t.Fatalf("%s/%s: masked run at %d follows a prompt the server never completed", r.RolloutID, s.Role, start)
					}
					found := false
					for _, c := range sampled {
						found = found || slices.Equal(c, s.InputIDs[start:end])
					}
					if !found {
						t.Fatalf("%s/%s: masked run at %d = %v is not what the server sampled for that prompt", r.RolloutID, s.Role, start, s.InputIDs[start:end])
					}
				} else {
					unmasked++
					run := s.InputIDs[start:end]
					switch {
					case start == 0 || history == rollout.HistoryRerender:
						if !rec.renders[hashIDs(s.InputIDs[:end])] {
							t.Fatalf("%s/%s: tokens up to the unmasked run ending at %d are not a /tokenize rendering", r.RolloutID, s.Role, end)
						}
					case s.InputIDs[start-1] == eot:
						if !rec.isRenderSuffix(s.InputIDs[start-1 : end]) {
							t.Fatalf("%s/%s: the unmasked run %d..%d after the sampled end of turn is not the end of a /tokenize rendering that follows an end of turn", r.RolloutID, s.Role, start, end)
						}
					default:
						closed++
						if run[0] != eot || !rec.isRenderSuffix(run) {
							t.Fatalf("%s/%s: the unmasked run %d..%d after a cut turn is not an end of turn and the end of a /tokenize rendering that follows it", r.RolloutID, s.Role, start, end)
						}
					}
					for i := start; i < end; i++ {
						if s.Logprobs[i] != 0 {
							t.Fatalf("%s/%s: logprob at unmasked %d", r.RolloutID, s.Role, i)
						}
					}
				}
				start = end
			}
		}
	}
	return masked, unmasked, closed
}

func samplePrompts(t testing.TB, n int) []dataset.Prompt {
	t.Helper()
	ps, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	return rollout.SelectPrompts(ps, map[string]float64{"professional": 0.3, "interpersonal": 0.4, "micro_ethics": 0.3}, n, 1, 0)
}

func runSim(t *testing.T, url string, prompts []dataset.Prompt, group int, clientOpts llm.Options) ([]dataset.Rollout, rollout.Summary) {
	t.Helper()
	return runGame(t, game{url: url, model: sim.DefaultModel, turnTokens: 96, finalTokens: 128, concurrency: 256,
		kwargs: map[string]any{"enable_thinking": false}}, prompts, group, clientOpts)
}

// game is how runGame plays: the server, the history mode, the chat
// template kwargs and the token bounds of a 5-round deliberation.
type game struct {
	url, model              string
	history                 rollout.HistoryMode
	kwargs                  map[string]any
	turnTokens, finalTokens int
	concurrency             int
	stop                    []string
}

// runGame plays group 5-round deliberations of each prompt (seed 42, run id
// "t") and returns the rollouts sorted by id and the summary.
func runGame(t *testing.T, g game, prompts []dataset.Prompt, group int, clientOpts llm.Options) ([]dataset.Rollout, rollout.Summary) {
	t.Helper()
	clientOpts.Endpoints = []string{g.url}
	client, err := llm.New(clientOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	r, err := rollout.NewRunner(rollout.RunnerOptions{
		Game:               deliberation.New(deliberation.Options{MaxRounds: 5, TurnTokens: g.turnTokens, FinalTokens: g.finalTokens}),
		Policy:             client,
		Model:              g.model,
		Sampling:           llm.Sampling{MaxTokens: g.turnTokens, Temperature: 1, TopP: 1, Stop: g.stop},
		ChatTemplateKwargs: g.kwargs,
		History:            g.history,
		GroupSize:          group, Concurrency: g.concurrency, Seed: 42, RunID: "t",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Rollout
	sum, err := r.Run(context.Background(), prompts, func(r *dataset.Rollout) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RolloutID < out[j].RolloutID })
	return out, sum
}

// TestSimRolloutTrajectories runs 64 prompts × 8 rollouts against
// serve-sim over real HTTP and checks every trajectory against what the
// server rendered and sampled; then writes the rollouts parquet and has
// pyarrow read it (when the project's Python environment is available).
func TestSimRolloutTrajectories(t *testing.T) {
	agents, err := deliberation.NewSim(nil) // the game's agents, as serve-sim's
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.New(sim.Options{Games: []sim.Answerer{agents}})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ts := httptest.NewServer(rec.wrap(srv.Handler()))
	defer ts.Close()

	rs, sum := runSim(t, ts.URL, samplePrompts(t, 64), 8, llm.Options{})
	if len(rs) != 512 || sum.Failed != 0 {
		t.Fatalf("got %d rollouts, %d failed; want 512, 0", len(rs), sum.Failed)
	}
	if sum.Agreed == 0 || sum.Agreed == len(rs) {
		t.Errorf("agreed %d of %d: the simulator should agree sometimes, not always", sum.Agreed, len(rs))
	}
	for _, r := range rs {
		if len(r.Sequences) != 3 {
			t.Fatalf("%s: %d sequences, want A, B and final", r.RolloutID, len(r.Sequences))
		}
	}
	masked, unmasked, _ := checkTrajectories(t, rec, rs, rollout.HistoryTokens, sim.TokenIMEnd)
	t.Logf("checked %d masked and %d unmasked runs; agreement %.2f, rounds to agreement %s", masked, unmasked, sum.AgreementRate, summary.Format(sum.RoundsToAgree))

	dir := t.TempDir()
	path := filepath.Join(dir, "rollouts.parquet")
	w, err := dataset.NewRolloutWriter(path, dataset.RolloutWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := dataset.ReadAllRollouts(path)
	if err != nil || len(back) != len(rs) {
		t.Fatalf("ReadAllRollouts = %d, %v", len(back), err)
	}
	py := os.Getenv("PARLEY_PYTHON")
	if py == "" {
		t.Skip("PARLEY_PYTHON unset: skipping the pyarrow read (make test sets it)")
	}
	script := `
import sys, pyarrow as pa, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
assert t.num_rows == int(sys.argv[2]), t.num_rows
seq = t.schema.field("sequences").type
assert pa.types.is_list(seq), seq
el = seq.value_type
assert el.field("input_ids").type == pa.list_(pa.field("element", pa.int32(), nullable=False)) or pa.types.is_list(el.field("input_ids").type)
assert el.field("input_ids").type.value_type == pa.int32(), el
assert el.field("loss_mask").type.value_type == pa.int8(), el
assert el.field("logprobs").type.value_type == pa.float32(), el
assert pa.types.is_list(t.schema.field("turns").type)
row = t.slice(0, 1).to_pylist()[0]
for s in row["sequences"]:
    assert isinstance(s["input_ids"], list) and len(s["input_ids"]) == len(s["loss_mask"]) == len(s["logprobs"])
print("ok", t.num_rows)
`
	out, err := exec.Command(py, "-c", script, path, fmt.Sprint(len(rs))).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow read: %v\n%s", err, out)
	}
}

// TestSimRolloutFaults runs the same seeds against a clean server and one
// injecting 20% 5xx, 429s with Retry-After, dropped connections and 1%
// hangs: the rollouts must be identical, or the failures named.
func TestSimRolloutFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	prompts := samplePrompts(t, 16)
	clean, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := httptest.NewServer(clean.Handler())
	defer cs.Close()
	faulty, err := sim.New(sim.Options{ErrorRate: 0.2, RateLimitRate: 0.05, RetryAfter: time.Second, HangRate: 0.01, DropRate: 0.01, FaultSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	fs := httptest.NewServer(faulty.Handler())
	defer fs.Close()
	defer faulty.Close()

	opts := llm.Options{RequestTimeout: 2 * time.Second, Retry: retry.Policy{MaxRetries: 12, BackoffBase: 5 * time.Millisecond, BackoffMax: 200 * time.Millisecond}}
	want, _ := runSim(t, cs.URL, prompts, 8, opts)
	got, sum := runSim(t, fs.URL, prompts, 8, opts)
	st := faulty.Stats()
	t.Logf("faults injected: %v; summary: failed %d", st.Faults, sum.Failed)
	if len(st.Faults) == 0 {
		t.Fatal("no faults were injected")
	}
	if len(got) != len(want) {
		t.Fatalf("faulty run wrote %d rollouts, clean %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Failed {
			t.Logf("rollout %s failed after retries: %s", g.RolloutID, g.Error)
			continue
		}
		if g.RolloutID != w.RolloutID || g.Final != w.Final || fmt.Sprint(g.Turns) != fmt.Sprint(w.Turns) || fmt.Sprint(g.Sequences) != fmt.Sprint(w.Sequences) {
			t.Errorf("rollout %s differs between the clean and the faulty run", w.RolloutID)
		}
	}
	if sum.Failed != len(sum.FailedIDs) {
		t.Errorf("failed %d but %d named", sum.Failed, len(sum.FailedIDs))
	}
}
