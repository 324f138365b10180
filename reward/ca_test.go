package reward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/golden"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

func TestCAPromptGolden(t *testing.T) {
	render := func(sys, user string) []byte {
		return []byte("=== system ===\n" + sys + "\n=== user ===\n" + user + "\n")
	}
	golden.Check(t, "testdata/ca_prompt_deliberation.golden", render(caSystem, RenderCAPrompt(therapist())))
	golden.Check(t, "testdata/ca_prompt_single.golden", render(caSystem, RenderCAPrompt(hobby())))
	golden.Check(t, "testdata/pairwise_prompt_conflict_resolution.golden", render(
		strings.Replace(pairwiseSystem, "%s", aspectCriteria[AspectConflictResolution], 1),
		RenderPairwisePrompt(therapist().Task, therapist().Persona("A"), therapist().Persona("B"), "Left answer.", "Right answer.")))
}

func TestCAPromptContents(t *testing.T) {
	r := therapist()
	p := RenderCAPrompt(r)
	for _, want := range []string{r.Task, r.Persona("A"), r.Persona("B"), r.Final} {
		if !strings.Contains(p, want) {
			t.Errorf("RenderCAPrompt(deliberation) lacks %q", want)
		}
	}
	for _, turn := range r.Turns {
		if strings.Contains(p, turn.Text) {
			t.Errorf("RenderCAPrompt shows dialogue turn %q; the judge scores the final completion only", turn.Text)
		}
	}
	s := RenderCAPrompt(hobby())
	if strings.Contains(s, "Agent A") || !strings.Contains(s, "single agent") {
		t.Errorf("RenderCAPrompt(single) = %q, want no personas and a single-agent note", s)
	}
}

func TestCAJudgeRequestOnTheWire(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, `{"rationale":"integrates both values","score":4}`)
	})
	opts := testClientOptions(srv)
	opts.MaxTokens = 321
	j, _ := newTestCA(t, opts)
	r := therapist()
	res, err := j.Judge(context.Background(), r)
	if err != nil {
		t.Fatalf("Judge: %v", err)
	}
	if res.Score != 4 || res.Rationale != "integrates both values" || res.Model != "judge-test" || res.Cached {
		t.Errorf("Judge = %+v, want score 4, the rationale, model judge-test, not cached", res)
	}
	if res.PromptTokens != 100 || res.CompletionTokens != 20 {
		t.Errorf("Judge tokens = %d/%d, want 100/20", res.PromptTokens, res.CompletionTokens)
	}
	raw := srv.Body(0)
	if !bytes.Contains(raw, []byte(`"temperature":0`)) {
		t.Errorf("request body lacks \"temperature\":0 (%d bytes, ends %q)", len(raw), raw[max(0, len(raw)-120):])
	}
	var body chattest.Body
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if body.Temperature == nil || *body.Temperature != 0 {
		t.Errorf("temperature = %v, want 0 sent", body.Temperature)
	}
	if body.Model != "judge-test" {
		t.Errorf("model = %q, want judge-test", body.Model)
	}
	if body.MaxTokens != 321 {
		t.Errorf("max_completion_tokens = %d, want 321", body.MaxTokens)
	}
	rf := body.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != CASchemaName || !rf.JSONSchema.Strict {
		t.Fatalf("response_format = %+v, want strict json_schema %s", rf, CASchemaName)
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(rf.JSONSchema.Schema, &schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	if len(schema.Properties) != 2 || schema.Properties["score"] == nil || schema.Properties["rationale"] == nil ||
		schema.Additional == nil || *schema.Additional || len(schema.Required) != 2 {
		t.Errorf("schema = %s, want score and rationale, both required, no additional properties", rf.JSONSchema.Schema)
	}
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
		t.Fatalf("messages = %+v, want system then user", body.Messages)
	}
	if body.Messages[0].Content != caSystem {
		t.Errorf("system message is not the rubric")
	}
	user := body.Messages[1].Content
	for _, want := range []string{r.Task, r.Persona("A"), r.Persona("B"), r.Final} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q", want)
		}
	}
	if got := srv.Header(0).Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
}

func TestCAJudgeWithoutStructuredOutput(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, "The plan integrates both sides. Score: 5")
	})
	opts := testClientOptions(srv)
	opts.DisableStructuredOutput = true
	j, _ := newTestCA(t, opts)
	res, err := j.Judge(context.Background(), therapist())
	if err != nil || res.Score != 5 {
		t.Fatalf("Judge = %+v, %v, want score 5", res, err)
	}
	if raw := srv.Body(0); bytes.Contains(raw, []byte("response_format")) || !bytes.Contains(raw, []byte(`"temperature":0`)) {
		t.Errorf("body (ends %q): want no response_format and temperature 0", raw[max(0, len(raw)-120):])
	}
}

func TestCAJudgeReplies(t *testing.T) {
	tests := []struct {
		name      string
		msg       map[string]any
		finish    string
		wantScore float64
		wantErr   string // substring; "" means success
	}{
		{"strict json", map[string]any{"content": `{"rationale":"ok","score":3}`}, "stop", 3, ""},
		{"code fence", map[string]any{"content": "```json\n{\"score\": 4, \"rationale\": \"fenced\"}\n```"}, "stop", 4, ""},
		{"json in prose", map[string]any{"content": `Here is my verdict: {"rationale": "embedded", "score": 2} Thanks.`}, "stop", 2, ""},
		{"score label", map[string]any{"content": "The solution balances both sides.\n**Score:** 4"}, "stop", 4, ""},
		{"fraction", map[string]any{"content": "I would rate this 5/5 for collective agency."}, "stop", 5, ""},
		{"string score", map[string]any{"content": `{"rationale":"quoted","score":"1"}`}, "stop", 1, ""},
		{"float integral", map[string]any{"content": `{"rationale":"x","score":4.0}`}, "stop", 4, ""},
		{"out of range", map[string]any{"content": `{"rationale":"x","score":7}`}, "stop", 0, "out of range"},
		{"zero", map[string]any{"content": `{"rationale":"x","score":0}`}, "stop", 0, "out of range"},
		{"non-integral", map[string]any{"content": `{"rationale":"x","score":3.5}`}, "stop", 0, "not an integer"},
		{"refusal field", map[string]any{"content": "", "refusal": "I can't help with that."}, "stop", 0, "refused"},
		{"refusal prose", map[string]any{"content": "I'm sorry, but I can't evaluate this."}, "stop", 0, "no score"},
		{"empty", map[string]any{"content": ""}, "stop", 0, "empty judge reply"},
		{"truncated", map[string]any{"content": `{"rationale":"this goes on and on`}, "length", 0, "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
				msg := map[string]any{"role": "assistant"}
				for k, v := range tt.msg {
					msg[k] = v
				}
				chattest.WriteMessage(w, msg, tt.finish)
			})
			opts := testClientOptions(srv)
			j, _ := newTestCA(t, opts)
			res, err := j.Judge(context.Background(), therapist())
			if tt.wantErr == "" {
				if err != nil || res.Score != tt.wantScore {
					t.Fatalf("Judge(%q) = %v, %v, want %v", tt.msg["content"], res.Score, err, tt.wantScore)
				}
				if srv.Calls() != 1 {
					t.Errorf("calls = %d, want 1", srv.Calls())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Judge(%q) = %v, %v, want error containing %q", tt.msg["content"], res.Score, err, tt.wantErr)
			}
			if !errors.Is(err, chat.ErrNoVerdict) {
				t.Errorf("Judge error %v does not match chat.ErrNoVerdict", err)
			}
			if got, want := srv.Calls(), opts.Retry.MaxRetries+1; got != want {
				t.Errorf("calls = %d, want %d (bounded retries)", got, want)
			}
		})
	}
}

func TestCAJudgeRetriesBadVerdictThenSucceeds(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		if n == 0 {
			chattest.WriteReply(w, `{"rationale":"x","score":11}`)
			return
		}
		chattest.WriteReply(w, `{"rationale":"fine","score":3}`)
	})
	j, _ := newTestCA(t, testClientOptions(srv))
	res, err := j.Judge(context.Background(), therapist())
	if err != nil || res.Score != 3 {
		t.Fatalf("Judge = %+v, %v, want 3 after one retry", res, err)
	}
	if srv.Calls() != 2 {
		t.Errorf("calls = %d, want 2", srv.Calls())
	}
}

func TestNewChatClientNeedsModel(t *testing.T) {
	if _, err := chat.New(chat.Options{}); err == nil {
		t.Errorf("chat.New(no model) = nil error, want error")
	}
}
