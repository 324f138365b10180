package sim

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func TestTokenizerRoundTrip(t *testing.T) {
	tok := NewTokenizer()
	tests := []struct {
		name, in string
	}{
		{"empty", ""},
		{"ascii", "Hello, world! The quick brown fox."},
		{"vocabulary", "We share agency together, and everyone is empowered."},
		{"unknown words", "Zyxwvut qwerty flibbertigibbet"},
		{"spaces", "  two  spaces   three\tand tab "},
		{"newlines", "line one\n\nline two\r\n"},
		{"digits and punctuation", "3.14159 -- 42% (yes) [AGREE] {x: 1}"},
		{"accents", "naïve café résumé Zürich"},
		{"cjk", "日本語のテキストと中文"},
		{"emoji", "ok 👍🏽 family 👨‍👩‍👧 flags 🇫🇷"},
		{"rtl", "שלום עולם مرحبا"},
		{"specials", "<|im_start|>user\nhi<|im_end|>\n<think>\n\n</think>\n\n<|endoftext|>"},
		{"partial specials", "<|im_sta <think <|im_end| </think"},
		{"invalid utf8", "bad \xff\xfe bytes \xc3"},
		{"nul", "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := tok.Encode(tt.in)
			if got := tok.Decode(ids); got != tt.in {
				t.Errorf("Decode(Encode(%q)) = %q, want the input", tt.in, got)
			}
			for _, id := range ids {
				if !ValidID(id) {
					t.Errorf("Encode(%q) has id %d outside the vocabulary", tt.in, id)
				}
			}
		})
	}
}

func TestTokenizerSpecialTokens(t *testing.T) {
	tok := NewTokenizer()
	tests := []struct {
		in   string
		want int32
	}{
		{"<|endoftext|>", TokenEndOfText},
		{"<|im_start|>", TokenIMStart},
		{"<|im_end|>", TokenIMEnd},
		{"<think>", TokenThinkStart},
		{"</think>", TokenThinkEnd},
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.in); !slices.Equal(got, []int32{tt.want}) {
			t.Errorf("Encode(%q) = %v, want [%d]", tt.in, got, tt.want)
		}
		if !IsSpecial(tt.want) {
			t.Errorf("IsSpecial(%d) = false, want true", tt.want)
		}
		if got := tok.DecodeSkipSpecial([]int32{tt.want}); got != "" {
			t.Errorf("DecodeSkipSpecial([%d]) = %q, want empty", tt.want, got)
		}
	}
	if IsSpecial('a') || IsSpecial(TokenEndOfText-1) {
		t.Errorf("IsSpecial is true for an ordinary id")
	}
}

func TestTokenizerWords(t *testing.T) {
	tok := NewTokenizer()
	tests := []struct {
		in   string
		want int // number of tokens
	}{
		{"together", 1},
		{" together", 1},
		{"Together", 1},
		{" everyone agrees", 3}, // " everyone" " agree" "s"
		{"AGREE", 1},
		{"[AGREE]", 3},
		{"\n", 1},
		{"é", 2}, // two bytes
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.in); len(got) != tt.want {
			t.Errorf("Encode(%q) = %v (%d tokens), want %d tokens", tt.in, got, len(got), tt.want)
		}
	}
}

// TestTokenizerConcatenation checks the property chat re-rendering relies
// on: text joined at a newline or a special token tokenizes as the
// concatenation of its parts.
func TestTokenizerConcatenation(t *testing.T) {
	tok := NewTokenizer()
	parts := []string{"assistant\n", "Hello there", "<|im_end|>", "\n", "<|im_start|>", "user\n", " leading space",
		"<think>", "\n\n", "</think>", "\n\n", "naïve\n", "日本\n", "tail"}
	for i := range parts {
		for j := range parts {
			a, b := parts[i], parts[j]
			if !boundaryStable(a, b) {
				continue
			}
			want := append(tok.Encode(a), tok.Encode(b)...)
			if got := tok.Encode(a + b); !slices.Equal(got, want) {
				t.Errorf("Encode(%q + %q) = %v, want Encode(a)+Encode(b) = %v", a, b, got, want)
			}
		}
	}
}

// boundaryStable reports whether a+b joins at a newline or a special token.
func boundaryStable(a, b string) bool {
	if a == "" || b == "" {
		return true
	}
	return a[len(a)-1] == '\n' || a[len(a)-1] == '>' && hasSpecialSuffix(a) || hasSpecialPrefix(b)
}

func hasSpecialSuffix(s string) bool {
	for _, sp := range NewTokenizer().specials {
		if len(s) >= len(sp.text) && s[len(s)-len(sp.text):] == sp.text {
			return true
		}
	}
	return false
}

func hasSpecialPrefix(s string) bool {
	_, n := NewTokenizer().matchSpecial(s)
	return n > 0
}

func FuzzTokenizerRoundTrip(f *testing.F) {
	for _, s := range []string{"", "hello world", "<|im_start|>x\ny<|im_end|>", "\xff", "日本 together"} {
		f.Add(s)
	}
	tok := NewTokenizer()
	f.Fuzz(func(t *testing.T, s string) {
		if got := tok.Decode(tok.Encode(s)); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		if utf8.ValidString(s) {
			if got := tok.DecodeSkipSpecial(tok.Encode(s)); len(got) > len(s) {
				t.Fatalf("DecodeSkipSpecial(Encode(%q)) = %q, longer than the input", s, got)
			}
		}
	})
}

func TestDecodeUnknownIDs(t *testing.T) {
	tok := NewTokenizer()
	if got := tok.Decode([]int32{-1, 100000, VocabSize, 'o', 'k'}); got != "ok" {
		t.Errorf("Decode(unknown ids + %q) = %q, want %q", "ok", got, "ok")
	}
}
