package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestTokenizeQwen3 renders over HTTP with the Qwen3 template: the
// reasoning of an assistant message (vLLM's "reasoning", or the older
// "reasoning_content") and enable_thinking reach the template, and the
// think tags are single tokens.
func TestTokenizeQwen3(t *testing.T) {
	_, ts := startServer(t, Options{Template: TemplateQwen3})
	tok := NewTokenizer()
	last := func(field string) []map[string]any {
		return []map[string]any{{"role": "user", "content": "U"}, {"role": "assistant", "content": "A", field: "why"}}
	}
	tests := []struct {
		name   string
		msgs   any
		gen    bool
		kwargs map[string]any
		want   string
	}{
		{"thinking disabled", []Message{{Role: "user", Content: "U"}}, true, map[string]any{"enable_thinking": false},
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"thinking enabled", []Message{{Role: "user", Content: "U"}}, true, map[string]any{"enable_thinking": true},
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"},
		{"reasoning", last("reasoning"), false, nil,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\nwhy\n</think>\n\nA<|im_end|>\n"},
		{"reasoning_content", last("reasoning_content"), false, nil,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\nwhy\n</think>\n\nA<|im_end|>\n"},
		{"history stripped", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "<think>\nwhy\n</think>\n\nA"}, {Role: "user", Content: "V"}}, false, nil,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nV<|im_end|>\n"},
	}
	for _, tt := range tests {
		var res tokenizeResponse
		mustPost(t, ts.URL+PathTokenize, map[string]any{"messages": tt.msgs, "add_generation_prompt": tt.gen,
			"chat_template_kwargs": tt.kwargs}, &res)
		if got := tok.Decode(res.Tokens); got != tt.want {
			t.Errorf("%s: /tokenize renders %q, want %q", tt.name, got, tt.want)
		}
		if want := tok.Encode(tt.want); !slices.Equal(res.Tokens, want) {
			t.Errorf("%s: /tokenize tokens differ from the tokenizer's", tt.name)
		}
	}
	for _, tag := range []string{"<think>", "</think>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"} {
		if ids := tok.Encode(tag); len(ids) != 1 || !IsSpecial(ids[0]) {
			t.Errorf("%s encodes as %v, want one special token", tag, ids)
		}
	}
}

// TestQwen3Thinking: with thinking enabled (a bare generation prompt) the
// Qwen3 agents open their reply with a think block; with thinking
// disabled, and with the ChatML template, they do not.
func TestQwen3Thinking(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "You are Agent A. Persona: protect privacy."}, {Role: "user", Content: "Open."}}
	for _, tc := range []struct {
		template  string
		thinking  bool
		wantThink bool
	}{
		{TemplateQwen3, true, true},
		{TemplateQwen3, false, false},
		{TemplateChatML, true, false},
	} {
		_, ts := startServer(t, Options{Template: tc.template})
		prompt := tokenizeHTTP(t, ts.URL, msgs, map[string]any{"enable_thinking": tc.thinking})
		var res completionResponse
		mustPost(t, ts.URL+PathCompletions, completionReq(prompt, 400, 1, 7), &res)
		ch := res.Choices[0]
		hasThink := strings.HasPrefix(ch.Text, "<think>\n") && strings.Contains(ch.Text, "\n</think>\n\n")
		if hasThink != tc.wantThink {
			t.Errorf("%s, thinking %v: reply %q; want a think block: %v", tc.template, tc.thinking, ch.Text, tc.wantThink)
		}
		if ch.FinishReason != "stop" || ch.TokenIDs[len(ch.TokenIDs)-1] != TokenIMEnd {
			t.Errorf("%s, thinking %v: finish %s, last token %d; want stop on <|im_end|>", tc.template, tc.thinking, ch.FinishReason, ch.TokenIDs[len(ch.TokenIDs)-1])
		}
		if tc.wantThink && (ch.TokenIDs[0] != TokenThinkStart || !slices.Contains(ch.TokenIDs, TokenThinkEnd)) {
			t.Errorf("%s: think tags are not single tokens in %v", tc.template, ch.TokenIDs[:4])
		}
	}
}

// TestEngineDies: after EngineDiesAfter completions the simulated engine
// answers as vLLM's dead engine does, and /tokenize still works.
func TestEngineDies(t *testing.T) {
	_, ts := startServer(t, Options{EngineDiesAfter: 2})
	prompt := tokenizeHTTP(t, ts.URL, []Message{{Role: "user", Content: "hi"}}, nil)
	for i := 0; i < 2; i++ {
		mustPost(t, ts.URL+PathCompletions, completionReq(prompt, 8, 1, 1), nil)
	}
	r, err := post(http.DefaultClient, ts.URL+PathCompletions, completionReq(prompt, 8, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Message, Type string
			Code          int
		}
	}
	if err := json.Unmarshal(r.body, &body); err != nil || r.status != 500 || body.Error.Message != EngineDeadMessage || body.Error.Type != "InternalServerError" || body.Error.Code != 500 {
		t.Errorf("third completion = %d %s, want vLLM's dead-engine 500", r.status, r.body)
	}
	resp, err := http.Get(ts.URL + PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/health = %d, want 503", resp.StatusCode)
	}
	tokenizeHTTP(t, ts.URL, []Message{{Role: "user", Content: "still renders"}}, nil)
}
