package llm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestAppendTokenizeBody: the hand-written /tokenize body is what
// json.Marshal writes for the request, byte for byte where no string holds
// a character encoding/json escapes for HTML (<, >, &), and the same JSON
// value where one does.
func TestAppendTokenizeBody(t *testing.T) {
	empty, think := "", "weigh both sides\n"
	for _, tt := range []struct {
		name string
		req  TokenizeRequest
	}{
		{"plain", TokenizeRequest{Model: "tiny", Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}},
			AddGenerationPrompt: true}},
		{"no model, no generation prompt", TokenizeRequest{Messages: []Message{{Role: "user", Content: "x"}}}},
		{"nil messages", TokenizeRequest{Model: "m"}},
		{"empty messages", TokenizeRequest{Model: "m", Messages: []Message{}}},
		{"reasoning", TokenizeRequest{Messages: []Message{{Role: "assistant", Content: "x", Reasoning: &empty},
			{Role: "assistant", Content: "y", Reasoning: &think}}, AddGenerationPrompt: true}},
		{"kwargs", TokenizeRequest{Model: "m", Messages: []Message{{Role: "user", Content: "u"}}, AddGenerationPrompt: true,
			ChatTemplateKwargs: map[string]any{"enable_thinking": false, "b": []any{1, "two"}, "a": map[string]any{"z": 1.5}}}},
		{"empty kwargs", TokenizeRequest{Messages: []Message{{Role: "user", Content: "u"}}, ChatTemplateKwargs: map[string]any{}}},
		{"escapes", TokenizeRequest{Model: "m\"q", Messages: []Message{{Role: "user",
			Content: "quote \" backslash \\ newline \n tab \t nul \x00 bell \x07 é 漢字 \u2028 \u2029 bad \xff\xfe end"}}}},
		{"html", TokenizeRequest{Messages: []Message{{Role: "user", Content: "<|im_start|>a & b <think>\n</think>"}},
			ChatTemplateKwargs: map[string]any{"x": "<&>"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendTokenizeBody([]byte("prefix"), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, []byte("prefix")) {
				t.Fatalf("appendTokenizeBody did not append: %s", got)
			}
			got = got[len("prefix"):]
			want, err := json.Marshal(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("appendTokenizeBody wrote invalid JSON %s: %v", got, err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("appendTokenizeBody = %s\njson.Marshal       = %s", got, want)
			}
			if !bytes.ContainsAny(got, "<>&") && !bytes.Equal(got, want) {
				t.Errorf("appendTokenizeBody = %s\njson.Marshal       = %s (want the same bytes)", got, want)
			}
		})
	}
	if _, err := appendTokenizeBody(nil, &TokenizeRequest{ChatTemplateKwargs: map[string]any{"f": func() {}}}); err == nil {
		t.Error("appendTokenizeBody with kwargs json cannot encode: nil error")
	}
}
