package sim

import (
	"slices"
	"testing"
)

func TestRenderChat(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "A"}, {Role: "user", Content: "V"}}
	tests := []struct {
		name string
		msgs []Message
		o    TemplateOptions
		want string
	}{
		{"plain", msgs[:2], TemplateOptions{},
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"},
		{"generation prompt", msgs[:2], TemplateOptions{AddGenerationPrompt: true},
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"},
		{"thinking disabled", msgs[:2], TemplateOptions{AddGenerationPrompt: true, DisableThinking: true},
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"history keeps empty think", msgs, TemplateOptions{DisableThinking: true},
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA<|im_end|>\n<|im_start|>user\nV<|im_end|>\n"},
		{"continue final", msgs[:3], TemplateOptions{ContinueFinalMessage: true},
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA"},
	}
	for _, tt := range tests {
		if got := RenderChat(tt.msgs, tt.o); got != tt.want {
			t.Errorf("%s: RenderChat = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParsePrompt(t *testing.T) {
	tok := NewTokenizer()
	msgs := []Message{{Role: "system", Content: "You are A."}, {Role: "user", Content: "Hi\nthere"}, {Role: "assistant", Content: "Reply. [AGREE]"}, {Role: "user", Content: "ok"}}
	for _, think := range []bool{false, true} {
		ids := tok.ApplyChatTemplate(msgs, TemplateOptions{AddGenerationPrompt: true, DisableThinking: think})
		p := tok.parsePrompt(ids)
		if !slices.Equal(p.msgs, msgs) {
			t.Errorf("parsePrompt (thinking disabled %v) msgs = %+v, want %+v", think, p.msgs, msgs)
		}
		if !p.open || p.openRole != "assistant" {
			t.Errorf("parsePrompt (thinking disabled %v) open = %v %q, want true assistant", think, p.open, p.openRole)
		}
	}
}

// TestPrefixExtension checks the property the game relies on, at the
// template level: the tokens of messages[:k] + generation prompt, then the
// reply's tokens and <|im_end|>, then the tokens of "\n<|im_start|>user\n..."
// equal the tokens of messages[:k] + [reply, user] + generation prompt.
func TestPrefixExtension(t *testing.T) {
	tok := NewTokenizer()
	base := []Message{{Role: "system", Content: "Persona: protect privacy.\nTask: decide."}, {Role: "user", Content: "Begin."}}
	replies := []string{"Plain reply.", "\nLeading newline", "Ends with newline\n", "naïve 日本 👍 [AGREE]", "<think>\nhmm\n</think>\n\nthought first", ""}
	for _, disable := range []bool{false, true} {
		o := TemplateOptions{AddGenerationPrompt: true, DisableThinking: disable}
		msgs := slices.Clone(base)
		for _, reply := range replies {
			p := tok.ApplyChatTemplate(msgs, o)
			seq := append(slices.Clone(p), tok.Encode(reply)...)
			seq = append(seq, TokenIMEnd)
			user := "Other side: fine by me."
			tail := RenderChat([]Message{{Role: "user", Content: user}}, o)
			seq = append(seq, tok.Encode("\n"+tail)...)
			msgs = append(msgs, Message{Role: "assistant", Content: reply}, Message{Role: "user", Content: user})
			if got := tok.ApplyChatTemplate(msgs, o); !slices.Equal(got, seq) {
				t.Errorf("thinking disabled %v, reply %q: re-rendered tokens differ at %d (len %d vs %d)",
					disable, reply, firstDiff(got, seq), len(got), len(seq))
			}
		}
	}
}

// TestRenderQwen3 checks the Qwen3 mode against Qwen3's own template: each
// want is what jinja2 renders with trl's qwen3.jinja (the template Qwen3
// ships) for the same messages, generation prompt and enable_thinking.
func TestRenderQwen3(t *testing.T) {
	ptr := func(s string) *string { return &s }
	tests := []struct {
		name            string
		msgs            []Message
		gen, noThinking bool
		want            string
	}{
		{"first turn, thinking disabled", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}, true, true,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"first turn, thinking enabled", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}, true, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"},
		{"enable_thinking true", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}, true, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"},
		{"history strips the empty think", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "<think>\n\n</think>\n\nA1"}, {Role: "user", Content: "V"}}, true, true,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nV<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"history strips reasoning", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "<think>\nhmm\n</think>\n\nA1"}, {Role: "user", Content: "V"}}, true, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nV<|im_end|>\n<|im_start|>assistant\n"},
		{"reasoning_content before the last query", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "A1", Reasoning: ptr("why")}, {Role: "user", Content: "V"}}, false, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nV<|im_end|>\n"},
		{"last assistant keeps an empty think", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "A1"}}, false, true,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA1<|im_end|>\n"},
		{"last assistant reasoning_content", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "\n\nA1", Reasoning: ptr("\nwhy\n")}}, false, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\nwhy\n</think>\n\nA1<|im_end|>\n"},
		{"lone assistant", []Message{{Role: "assistant", Content: "x", Reasoning: ptr("")}}, false, false,
			"<|im_start|>assistant\nx<|im_end|>\n"},
		{"lone assistant then user", []Message{{Role: "assistant", Content: "x", Reasoning: ptr("")}, {Role: "user", Content: "u"}}, true, true,
			"<|im_start|>assistant\nx<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"no system", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "A1"}, {Role: "user", Content: "V"}}, true, true,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nV<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"later system", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "system", Content: "S2"}}, false, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>system\nS2<|im_end|>\n"},
		{"assistant after last query, not last", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "A1", Reasoning: ptr("r")}, {Role: "assistant", Content: "A2"}}, false, false,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\nA1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n"},
		{"assistant after last query, empty reasoning, not last", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "A1"}, {Role: "assistant", Content: "A2"}}, false, false,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n"},
		{"tools", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "A1"}, {Role: "tool", Content: "t1"}, {Role: "tool", Content: "t2"}}, true, false,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\n<tool_response>\nt1\n</tool_response>\n<tool_response>\nt2\n</tool_response><|im_end|>\n<|im_start|>assistant\n"},
		{"tool_response user is not a query", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "A1"}, {Role: "user", Content: "<tool_response>\nx\n</tool_response>"}, {Role: "assistant", Content: "A2"}}, false, false,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\n<tool_response>\nx\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n"},
		{"multiple think tags", []Message{{Role: "user", Content: "U"}, {Role: "assistant", Content: "<think>a</think>mid<think>b</think>\nend"}, {Role: "user", Content: "V"}}, false, false,
			"<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nend<|im_end|>\n<|im_start|>user\nV<|im_end|>\n"},
		{"other roles render nothing", []Message{{Role: "user", Content: "U"}, {Role: "developer", Content: "D"}}, false, false,
			"<|im_start|>user\nU<|im_end|>\n"},
	}
	for _, tt := range tests {
		o := TemplateOptions{Qwen3: true, AddGenerationPrompt: tt.gen, DisableThinking: tt.noThinking}
		if got := RenderChat(tt.msgs, o); got != tt.want {
			t.Errorf("%s: RenderChat = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestPrefixBreakQwen3 checks that the Qwen3 template breaks the prefix a
// turn was sampled from when the conversation is re-rendered, with thinking
// disabled (the empty think block goes) and enabled (the reasoning goes),
// while the ChatML template extends it.
func TestPrefixBreakQwen3(t *testing.T) {
	tok := NewTokenizer()
	for _, tc := range []struct {
		name      string
		o         TemplateOptions
		reply     string
		wantBreak bool
	}{
		{"qwen3, thinking disabled", TemplateOptions{Qwen3: true, DisableThinking: true}, "reply", true},
		{"qwen3, thinking enabled", TemplateOptions{Qwen3: true}, "<think>\nwhy\n</think>\n\nreply", true},
		{"chatml, thinking disabled", TemplateOptions{DisableThinking: true}, "reply", false},
		{"chatml, thinking enabled", TemplateOptions{}, "reply", false},
	} {
		tc.o.AddGenerationPrompt = true
		msgs := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}
		sampled := append(tok.ApplyChatTemplate(msgs, tc.o), tok.Encode(tc.reply+"<|im_end|>")...)
		msgs = append(msgs, Message{Role: "assistant", Content: tc.reply}, Message{Role: "user", Content: "next"})
		f := tok.ApplyChatTemplate(msgs, tc.o)
		extends := len(f) > len(sampled) && slices.Equal(f[:len(sampled)], sampled)
		if extends == tc.wantBreak {
			t.Errorf("%s: the re-render extends the sampled sequence = %v, want %v", tc.name, extends, !tc.wantBreak)
		}
	}
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
