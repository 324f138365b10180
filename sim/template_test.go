package sim

import (
	"slices"
	"testing"
)

func TestRenderChat(t *testing.T) {
	msgs := []Message{{"system", "S"}, {"user", "U"}, {"assistant", "A"}, {"user", "V"}}
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
		{"qwen3 strips history think", msgs, TemplateOptions{DisableThinking: true, StripHistoryThink: true},
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nV<|im_end|>\n"},
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
	msgs := []Message{{"system", "You are A."}, {"user", "Hi\nthere"}, {"assistant", "Reply. [AGREE]"}, {"user", "ok"}}
	for _, think := range []bool{false, true} {
		ids := tok.ApplyChatTemplate(msgs, TemplateOptions{AddGenerationPrompt: true, DisableThinking: think})
		p := tok.parsePrompt(ids)
		if !slices.Equal(p.msgs, msgs) {
			t.Errorf("parsePrompt (thinking disabled %v) msgs = %q, want %q", think, p.msgs, msgs)
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
	base := []Message{{"system", "Persona: protect privacy.\nTask: decide."}, {"user", "Begin."}}
	replies := []string{"Plain reply.", "\nLeading newline", "Ends with newline\n", "naïve 日本 👍 [AGREE]", "<think>\nhmm\n</think>\n\nthought first", ""}
	for _, disable := range []bool{false, true} {
		o := TemplateOptions{AddGenerationPrompt: true, DisableThinking: disable}
		msgs := slices.Clone(base)
		for _, reply := range replies {
			p := tok.ApplyChatTemplate(msgs, o)
			seq := append(slices.Clone(p), tok.Encode(reply)...)
			seq = append(seq, TokenIMEnd)
			user := "Other side: fine by me."
			tail := RenderChat([]Message{{"user", user}}, o)
			seq = append(seq, tok.Encode("\n"+tail)...)
			msgs = append(msgs, Message{"assistant", reply}, Message{"user", user})
			if got := tok.ApplyChatTemplate(msgs, o); !slices.Equal(got, seq) {
				t.Errorf("thinking disabled %v, reply %q: re-rendered tokens differ at %d (len %d vs %d)",
					disable, reply, firstDiff(got, seq), len(got), len(seq))
			}
		}
	}
}

// TestPrefixBreakQwen3 checks that StripHistoryThink reproduces Qwen3's
// prefix break when thinking is disabled.
func TestPrefixBreakQwen3(t *testing.T) {
	tok := NewTokenizer()
	o := TemplateOptions{AddGenerationPrompt: true, DisableThinking: true, StripHistoryThink: true}
	msgs := []Message{{"system", "S"}, {"user", "U"}}
	p := tok.ApplyChatTemplate(msgs, o)
	msgs = append(msgs, Message{"assistant", "reply"}, Message{"user", "next"})
	f := tok.ApplyChatTemplate(msgs, o)
	if len(f) > len(p) && slices.Equal(f[:len(p)], p) {
		t.Errorf("with StripHistoryThink the re-render extends the prompt; want a prefix break")
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
