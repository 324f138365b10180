package rollout_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
)

// historyCase is one way of playing the same 5-round deliberations.
type historyCase struct {
	history  rollout.HistoryMode
	thinking bool
}

func (c historyCase) String() string {
	s := string(c.history) + "/thinking-off"
	if c.thinking {
		s = string(c.history) + "/thinking-on"
	}
	return s
}

// historyServer is a policy server behind the recording middleware.
type historyServer struct {
	url, model string
	rec        *recorder
	// eot is the template's end-of-turn token (sim.TokenIMEnd; on vLLM
	// the Bridge's reading of the template).
	eot int32
	// qwen3 is true when the server's template behaves as Qwen3's: earlier
	// turns re-render without their think block.
	qwen3 bool
	// genPrompt returns the generation prompt the template renders after a
	// user message, by enable_thinking, for checking each prompt's end.
	genPrompt func(thinking bool) []int32
	// opts shape each game on this server.
	turnTokens, finalTokens, concurrency int
	clientOpts                           llm.Options
	// stop are stop strings; cut says whether turns will be cut before
	// their end of turn (by max_tokens or stop), so that tokens mode must
	// close some, or none (nil: either).
	stop []string
	cut  *bool
}

// checkHistory plays the same 5-round deliberations (no agent ever agrees
// on serve-sim; a tiny random model never writes the marker) in tokens and
// rerender mode and checks what issue 8 asks of them: tokens mode gives no
// prefix break and exactly one sequence per agent plus the final's; every
// mask-1 run is the token_ids the server returned for exactly the tokens
// before it; each completion prompt ends with the generation prompt the
// template renders; and rerender mode, on a Qwen3 template with thinking
// off, breaks the prefix at every later turn of each agent (8 per rollout),
// each break counted and starting a new sequence.
func checkHistory(t *testing.T, srv historyServer, prompts []dataset.Prompt, group int, cases []historyCase) {
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			srv.rec.mu.Lock()
			srv.rec.prompts = nil
			srv.rec.mu.Unlock()
			g := game{url: srv.url, model: srv.model, history: c.history, kwargs: map[string]any{"enable_thinking": c.thinking},
				turnTokens: srv.turnTokens, finalTokens: srv.finalTokens, concurrency: srv.concurrency, stop: srv.stop}
			rs, sum := runGame(t, g, prompts, group, srv.clientOpts)
			if sum.Failed != 0 || len(rs) != len(prompts)*group {
				t.Fatalf("%d rollouts, %d failed: %v", len(rs), sum.Failed, rs[0].Error)
			}
			masked, unmasked, closed := checkTrajectories(t, srv.rec, rs, c.history, srv.eot)
			if c.history == rollout.HistoryTokens && (int64(closed) != sum.ClosedTurns || (srv.cut != nil && *srv.cut != (closed > 0))) {
				t.Errorf("%d turns closed by hand in the sequences, %d counted; want some: %v", closed, sum.ClosedTurns, *srv.cut)
			}
			for _, r := range rs {
				if r.Rounds != 5 || r.Agreed {
					t.Fatalf("%s: %d rounds, agreed %v; want the full 5 rounds", r.RolloutID, r.Rounds, r.Agreed)
				}
				roles := map[string]int{}
				for _, s := range r.Sequences {
					roles[s.Role]++
				}
				switch {
				case c.history == rollout.HistoryTokens:
					if r.PrefixBreaks != 0 || len(r.Sequences) != 3 || roles["A"] != 1 || roles["B"] != 1 || roles["final"] != 1 {
						t.Errorf("%s: %d prefix breaks, sequences by role %v; want 0 and one each of A, B, final", r.RolloutID, r.PrefixBreaks, roles)
					}
				case srv.qwen3 && !c.thinking:
					if r.PrefixBreaks != 8 || len(r.Sequences) != 11 || roles["A"] != 5 || roles["B"] != 5 {
						t.Errorf("%s: %d prefix breaks, sequences by role %v; want 8, and 5 each for A and B", r.RolloutID, r.PrefixBreaks, roles)
					}
				}
			}
			if srv.genPrompt != nil {
				want := srv.genPrompt(c.thinking)
				srv.rec.mu.Lock()
				for _, p := range srv.rec.prompts {
					if !slices.Equal(p[max(0, len(p)-len(want)):], want) {
						t.Errorf("a completion prompt ends with %v, not the generation prompt %v", p[max(0, len(p)-len(want)):], want)
						break
					}
				}
				srv.rec.mu.Unlock()
			}
			t.Logf("%s: %d rollouts; prefix breaks %d (%.2f per rollout), sequences per rollout %.2f, trainer tokens per sampled token %.2f, "+
				"trainer tokens %d, sampled %d, prompt tokens sent %d (%.0f per rollout), closed turns %d; %d masked and %d unmasked runs checked",
				c, len(rs), sum.PrefixBreaks, float64(sum.PrefixBreaks)/float64(len(rs)), sum.SequencesPerRollout, sum.TrainerTokensPerSampled,
				sum.TrainerTokens, sum.SampledTokens, sum.PromptTokensSent, float64(sum.PromptTokensSent)/float64(len(rs)), sum.ClosedTurns, masked, unmasked)
		})
	}
}

var allHistoryCases = []historyCase{
	{rollout.HistoryTokens, false}, {rollout.HistoryTokens, true},
	{rollout.HistoryRerender, false}, {rollout.HistoryRerender, true},
}

// TestHistoryQwen3Sim plays on serve-sim with Qwen3's template.
func TestHistoryQwen3Sim(t *testing.T) {
	s, err := sim.New(sim.Options{Template: sim.TemplateQwen3, AgreeProb: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ts := httptest.NewServer(rec.wrap(s.Handler()))
	defer ts.Close()
	tok := s.Tokenizer()
	srv := historyServer{url: ts.URL, model: sim.DefaultModel, rec: rec, qwen3: true, eot: sim.TokenIMEnd,
		genPrompt: func(thinking bool) []int32 {
			if thinking {
				return tok.Encode("<|im_end|>\n<|im_start|>assistant\n")
			}
			return tok.Encode("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
		},
		turnTokens: 160, finalTokens: 160, concurrency: 64, cut: new(bool)}
	checkHistory(t, srv, samplePrompts(t, 16), 2, allHistoryCases)
}

// TestHistoryCutTurnsSim: turns cut by max_tokens or by a stop string end
// without <|im_end|>; tokens mode closes them by hand and still keeps one
// sequence per agent.
func TestHistoryCutTurnsSim(t *testing.T) {
	yes := true
	s, err := sim.New(sim.Options{Template: sim.TemplateQwen3, AgreeProb: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		turnTokens int
		stop       []string
	}{
		{"max_tokens", 30, nil},
		{"stop string", 160, []string{"."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			ts := httptest.NewServer(rec.wrap(s.Handler()))
			defer ts.Close()
			srv := historyServer{url: ts.URL, model: sim.DefaultModel, rec: rec, qwen3: true, eot: sim.TokenIMEnd,
				turnTokens: tc.turnTokens, finalTokens: 160, concurrency: 16, stop: tc.stop, cut: &yes}
			checkHistory(t, srv, samplePrompts(t, 4), 2, []historyCase{{rollout.HistoryTokens, false}, {rollout.HistoryTokens, true}})
		})
	}
}

// TestHistoryVLLM plays the same games on a real vLLM: PARLEY_VLLM_URL (its
// base URL) and PARLEY_VLLM_MODEL (its served model name). With a template
// that switches on enable_thinking (Qwen3's), rerender mode must show its 8
// breaks per rollout; with plain ChatML only tokens mode is judged.
func TestHistoryVLLM(t *testing.T) {
	base, model := os.Getenv("PARLEY_VLLM_URL"), os.Getenv("PARLEY_VLLM_MODEL")
	if base == "" || model == "" {
		t.Skip("PARLEY_VLLM_URL and PARLEY_VLLM_MODEL unset: no real vLLM to play against (the CI harness sets them)")
	}
	target, err := url.Parse(strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ts := httptest.NewServer(rec.wrap(httputil.NewSingleHostReverseProxy(target)))
	defer ts.Close()
	clientOpts := llm.Options{RequestTimeout: 5 * time.Minute, Retry: retry.Policy{MaxRetries: 2}}
	client, err := llm.New(llm.Options{Endpoints: []string{ts.URL}, RequestTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	info, err := client.Preflight(ctx, model)
	if err != nil {
		t.Fatal(err)
	}
	// The generation prompt after a user message, by enable_thinking: what
	// the user message renders to with and without it.
	gen := map[bool][]int32{}
	for _, thinking := range []bool{false, true} {
		kw := map[string]any{"enable_thinking": thinking}
		msgs := []llm.Message{{Role: "user", Content: "u"}}
		with, err := client.Tokenize(ctx, llm.TokenizeRequest{Model: model, Messages: msgs, AddGenerationPrompt: true, ChatTemplateKwargs: kw})
		if err != nil {
			t.Fatal(err)
		}
		without, err := client.Tokenize(ctx, llm.TokenizeRequest{Model: model, Messages: msgs, ChatTemplateKwargs: kw})
		if err != nil {
			t.Fatal(err)
		}
		gen[thinking] = with.Tokens[len(without.Tokens):]
	}
	qwen3 := !slices.Equal(gen[false], gen[true])
	eot, gap, err := rollout.NewBridge(client).TemplateEnd(ctx, model, map[string]any{"enable_thinking": false})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the template ends an assistant message with token %d, then %v", eot, gap)
	t.Logf("vLLM %s serving %s; the template switches on enable_thinking: %v", info[0].Version, model, qwen3)
	srv := historyServer{url: ts.URL, model: model, rec: rec, qwen3: qwen3, eot: eot,
		genPrompt:  func(thinking bool) []int32 { return gen[thinking] },
		turnTokens: 24, finalTokens: 24, concurrency: 4, clientOpts: clientOpts}
	cases := allHistoryCases
	if !qwen3 {
		cases = []historyCase{{rollout.HistoryTokens, false}, {rollout.HistoryRerender, false}}
	}
	checkHistory(t, srv, samplePrompts(t, 2), 2, cases)
}

// TestBridgeErrorOverHTTP: a server whose template renders no generation
// prompt stops a tokens-mode run before any rollout, with one error
// (ErrBridge) naming the cause and the fix, over HTTP; rerender mode does
// not need the bridge and plays.
func TestBridgeErrorOverHTTP(t *testing.T) {
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A template without a generation prompt: add_generation_prompt is
	// dropped on its way to the simulator.
	noGen := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" {
			b, _ := io.ReadAll(r.Body)
			body := strings.Replace(string(b), `"add_generation_prompt":true`, `"add_generation_prompt":false`, 1)
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		s.Handler().ServeHTTP(w, r)
	})
	ts := httptest.NewServer(noGen)
	defer ts.Close()
	client, err := llm.New(llm.Options{Endpoints: []string{ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, h := range []rollout.HistoryMode{rollout.HistoryTokens, rollout.HistoryRerender} {
		r, err := rollout.NewRunner(rollout.RunnerOptions{
			Game:   deliberation.New(deliberation.Options{MaxRounds: 2, TurnTokens: 32, FinalTokens: 32}),
			Policy: client, Model: sim.DefaultModel, Sampling: llm.Sampling{MaxTokens: 32, Temperature: 1},
			History: h, GroupSize: 2, Concurrency: 4, Seed: 42,
		})
		if err != nil {
			t.Fatal(err)
		}
		written := 0
		sum, err := r.Run(context.Background(), samplePrompts(t, 2), func(*dataset.Rollout) error { written++; return nil })
		switch h {
		case rollout.HistoryTokens:
			if !errors.Is(err, rollout.ErrBridge) || !strings.Contains(err.Error(), "no generation prompt") ||
				!strings.Contains(err.Error(), "rollout.history: rerender") || written != 0 || sum.Requests != 0 {
				t.Errorf("tokens mode: Run = %v after %d rollouts, %d requests; want ErrBridge (no generation prompt, the fix) before any rollout",
					err, written, sum.Requests)
			}
		case rollout.HistoryRerender:
			if err != nil || written != 4 {
				t.Errorf("rerender mode: Run = %v, %d rollouts; want the 4 rollouts", err, written)
			}
		}
	}
}
