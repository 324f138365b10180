package pystr

import (
	"regexp"
	"testing"
)

// TestIgnoreCase: case-insensitive matches as Python's re.IGNORECASE makes
// them (sre compares simple lowercases, plus _ignorecase_fixes), where Go's
// (?i) (simple case folding) differs in the marked cases.
func TestIgnoreCase(t *testing.T) {
	tests := []struct {
		pattern, text   string
		want, goDiffers bool
	}{
		{"i", "ı", true, true},       // dotless i
		{"i", "İ", true, true},       // dotted capital I lowers to i
		{"I", "ı", true, true},       // lower(I) = i, whose fix is ı
		{"ı", "I", true, true},       // and back
		{"ﬅ", "ﬆ", true, true},       // long s t, s t ligatures
		{"ΐ", "ΐ", true, false},      // Greek iota with dialytika and tonos/oxia
		{"k", "\u212a", true, false}, // Kelvin sign: both agree
		{"s", "ſ", true, false},      // long s: both agree
		{"ß", "ẞ", true, false},
		{"st", "ﬆ", false, false}, // no full case folding in either
		{"ss", "ß", false, false},
		{"straße", "STRASSE", false, false},
		{"Mona Lisa", "mona lisa", true, false},
		{"^[a-z]+$", "İıſ", true, true},
		{"^[^a-z]", "A", false, false},
		{"^[^a-z]", "ı", false, true},
		{"^[^a-z]", "1", true, false},
		{`\w+`, "ÉTÉ", true, false},
		{"café", "CAFÉ", true, false},
	}
	for _, tt := range tests {
		p, err := IgnoreCase(tt.pattern)
		if err != nil {
			t.Fatalf("IgnoreCase(%q): %v", tt.pattern, err)
		}
		got := regexp.MustCompile(p).MatchString(tt.text)
		if got != tt.want {
			t.Errorf("IgnoreCase(%q) on %q = %v, want %v (Python); pattern %s", tt.pattern, tt.text, got, tt.want, p)
		}
		if goGot := regexp.MustCompile("(?i)" + tt.pattern).MatchString(tt.text); (goGot != tt.want) != tt.goDiffers {
			t.Errorf("(?i)%s on %q = %v: the case is marked goDiffers=%v", tt.pattern, tt.text, goGot, tt.goDiffers)
		}
	}
}
