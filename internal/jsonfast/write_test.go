package jsonfast

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
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

func TestAppendInt32(t *testing.T) {
	for _, v := range []int32{-7, 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 151645, 999999, 1000000, 2147483647} {
		if got, want := string(AppendInt32([]byte("x"), v)), "x"+strconv.Itoa(int(v)); got != want {
			t.Errorf("AppendInt32(%d) = %q, want %q", v, got, want)
		}
	}
}

// FuzzReaderSkip checks the reader's validation against encoding/json: a
// whole input is read (Skip, then End) exactly when json.Valid accepts it.
func FuzzReaderSkip(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `[1,]`, `{"a"}`, `-0.5e+3`, `"x`, `tru`, `[1 2]`, `{"a":1}}`, " \t\n[true,false,null]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		err := r.Skip()
		if err == nil {
			err = r.End()
		}
		if got, want := err == nil, json.Valid(b); got != want {
			t.Errorf("Reader on %q: read whole = %v (%v), json.Valid = %v", b, got, err, want)
		}
	})
}

func TestInt32sAndUint31s(t *testing.T) {
	var got []int32
	r := NewReader([]byte(` [0, -5, 2147483647] `))
	if err := r.Int32s(func(v int32) { got = append(got, v) }); err != nil || r.End() != nil {
		t.Fatalf("Int32s = %v", err)
	}
	if !slices.Equal(got, []int32{0, -5, 2147483647}) {
		t.Errorf("Int32s = %v", got)
	}
	for _, in := range []string{`[2147483648]`, `[1.5]`, `["1"]`} {
		if err := NewReader([]byte(in)).Int32s(func(int32) {}); err == nil {
			t.Errorf("Int32s(%s) = nil error", in)
		}
	}
	for _, in := range []string{`[-1]`, `[01]`, `[1e3]`} {
		if err := NewReader([]byte(in)).Uint31s(func(int32) {}); err == nil {
			t.Errorf("Uint31s(%s) = nil error", in)
		}
	}
}
