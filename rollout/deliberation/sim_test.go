package deliberation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/golden"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	_ "github.com/parleyhq/parley/rollout/games"
	"github.com/parleyhq/parley/sim"
)

// simGames is every registered game's serve-sim answers with their
// defaults, as serve-sim gives them to sim.New.
func simGames(t *testing.T) []sim.Answerer {
	t.Helper()
	var out []sim.Answerer
	for _, s := range rollout.Games() {
		if s.Sim == nil {
			continue
		}
		a, err := s.Sim(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// post sends body as JSON to url and decodes the answer into out.
func post(t *testing.T, url string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// simAgents plays every seat on a serve-sim as one model, through chat
// completions or through /tokenize and token-id completions (the policy's
// path, with Qwen3's think block when think is set), and writes down every
// reply.
type simAgents struct {
	t           *testing.T
	url, model  string
	completions bool
	think       bool
	seed        int64
	log         *bytes.Buffer
}

func (a *simAgents) Turn(_ context.Context, role string, msgs []llm.Message, opts rollout.TurnOptions) (rollout.Reply, error) {
	a.seed++
	var text string
	var ids []int32
	if a.completions {
		var tok struct {
			Tokens []int32 `json:"tokens"`
		}
		post(a.t, a.url+sim.PathTokenize, map[string]any{"model": a.model, "messages": msgs, "add_generation_prompt": true,
			"chat_template_kwargs": map[string]any{"enable_thinking": a.think}}, &tok)
		var out struct {
			Choices []struct {
				Text     string  `json:"text"`
				TokenIDs []int32 `json:"token_ids"`
			} `json:"choices"`
		}
		post(a.t, a.url+sim.PathCompletions, map[string]any{"model": a.model, "prompt": tok.Tokens, "max_tokens": opts.MaxTokens,
			"seed": a.seed, "return_token_ids": true}, &out)
		text, ids = out.Choices[0].Text, out.Choices[0].TokenIDs
	} else {
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		post(a.t, a.url+sim.PathChat, map[string]any{"model": a.model, "messages": msgs, "max_tokens": opts.MaxTokens, "seed": a.seed}, &out)
		text = out.Choices[0].Message.Content
	}
	h := fnv.New64a()
	for _, id := range ids {
		fmt.Fprintf(h, "%d,", id)
	}
	fmt.Fprintf(a.log, "  %s (%d tokens %016x): %s\n", role, len(ids), h.Sum64(), text)
	return rollout.Reply{Text: text, Raw: text, Tokens: len(ids)}, nil
}

// TestSimGolden plays the game on serve-sim, every registered game's
// answers given, as the base model and as a LoRA adapter, through chat
// and token-id completions (ChatML, and Qwen3's template with thinking),
// and the judge scores each final solution: the transcripts are
// testdata/sim.golden.txt. serve-sim's answers to the game are the same
// whichever package writes them.
func TestSimGolden(t *testing.T) {
	rows, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	for _, template := range []string{sim.TemplateChatML, sim.TemplateQwen3} {
		srv, err := sim.New(sim.Options{Games: simGames(t), Template: template})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		defer ts.Close()
		resp, err := http.Post(ts.URL+sim.PathLoadLoRA, "application/json",
			bytes.NewReader([]byte(fmt.Sprintf(`{"lora_name":"step-3","lora_path":%q}`, t.TempDir()))))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("load adapter: %v %v", resp, err)
		}
		resp.Body.Close()
		g := deliberation.New(deliberation.Options{MaxRounds: 4, TurnTokens: 70, FinalTokens: 110})
		for _, mode := range []struct {
			name               string
			completions, think bool
		}{{"chat", false, false}, {"completions", true, false}, {"completions-think", true, true}} {
			if mode.think && template != sim.TemplateQwen3 {
				continue
			}
			for _, model := range []string{sim.DefaultModel, "step-3"} {
				for i, p := range rows[:8] {
					fmt.Fprintf(&log, "%s %s %s %s\n", template, mode.name, model, p.ID)
					a := &simAgents{t: t, url: ts.URL, model: model, completions: mode.completions, think: mode.think, seed: int64(100 * i), log: &log}
					var rec dataset.Rollout
					if err := g.Play(context.Background(), p, a, &rec); err != nil {
						t.Fatal(err)
					}
					var judged struct {
						Choices []struct {
							Message struct {
								Content string `json:"content"`
							} `json:"message"`
						} `json:"choices"`
					}
					post(t, ts.URL+sim.PathChat, map[string]any{"model": sim.DefaultJudgeModel,
						"messages":        []llm.Message{{Role: "user", Content: "Task: " + p.Task + "\n\nFinal completion: " + rec.Final}},
						"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": sim.SchemaCAScore}}}, &judged)
					fmt.Fprintf(&log, "  agreed %v in %d rounds; judge %s\n", rec.Agreed, rec.Rounds, judged.Choices[0].Message.Content)
				}
			}
		}
	}
	golden.Check(t, "testdata/sim.golden.txt", log.Bytes())
}
