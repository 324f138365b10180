package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// marshalNoHTML is encoding/json's encoding of s with HTML escaping off,
// the reference AppendString must match byte for byte.
func marshalNoHTML(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatalf("json.Encode(%q): %v", s, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the exact encoding, "" to check against encoding/json only
	}{
		{"empty", "", `""`},
		{"plain", "plain", `"plain"`},
		{"quote and backslash", `quote " and backslash \`, `"quote \" and backslash \\"`},
		{"short escapes", "new\nline\r\ttab", `"new\nline\r\ttab"`},
		{"control characters", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"all mixed controls", "ctl\x00\x1f\n\r\t\b\f", `"ctl\u0000\u001f\n\r\t\b\f"`},
		{"html left alone", "<|im_end|> & <think>", `"<|im_end|> & <think>"`},
		{"multibyte", "héllo wörld ✓ 🙂 naïve 日本 👍", `"héllo wörld ✓ 🙂 naïve 日本 👍"`},
		{"invalid utf8", "bad utf8 \xff\xfe end", `"bad utf8 \ufffd\ufffd end"`},
		{"truncated sequence", "cut \xe2\x82", `"cut \ufffd\ufffd"`},
		{"lone continuation at end", "end\x80", `"end\ufffd"`},
		{"line and paragraph separators", "sep\u2028\u2029", `"sep\u2028\u2029"`},
		{"separator between text", "a\u2028b", `"a\u2028b"`},
		{"literal replacement char", "\ufffd", "\"\ufffd\""},
		{"all escapes together", "\"\\\n\u2028\xff<", `"\"\\\n\u2028\ufffd<"`},
	}
	for _, tt := range tests {
		got := AppendString(nil, tt.in)
		if want := marshalNoHTML(t, tt.in); !bytes.Equal(got, want) {
			t.Errorf("%s: AppendString(%q) = %s, want %s (encoding/json)", tt.name, tt.in, got, want)
		}
		if tt.want != "" && string(got) != tt.want {
			t.Errorf("%s: AppendString(%q) = %s, want %s", tt.name, tt.in, got, tt.want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%s: AppendString(%q) = %s: invalid JSON: %v", tt.name, tt.in, got, err)
			continue
		}
		want := tt.in
		if !utf8.ValidString(tt.in) {
			want = string([]rune(tt.in)) // invalid bytes become U+FFFD
		}
		if back != want {
			t.Errorf("%s: AppendString(%q) decodes to %q, want %q", tt.name, tt.in, back, want)
		}
	}
}

func TestAppendStringAppends(t *testing.T) {
	dst := []byte(`{"k":`)
	if got, want := string(AppendString(dst, "v\n")), `{"k":"v\n"`; got != want {
		t.Errorf("AppendString(%q, %q) = %s, want %s", `{"k":`, "v\n", got, want)
	}
}

// TestAppendStringAllBytes encodes every single byte and every rune below
// U+3000 and compares each with encoding/json.
func TestAppendStringAllBytes(t *testing.T) {
	for b := 0; b < 256; b++ {
		s := string([]byte{'x', byte(b), 'y'})
		if got, want := AppendString(nil, s), marshalNoHTML(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	for r := rune(0x80); r < 0x3000; r++ {
		s := string(r)
		if got, want := AppendString(nil, s), marshalNoHTML(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := "The assistant replied: \"I hear you\" — and then\nwaited.\t<|im_end|>"
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
