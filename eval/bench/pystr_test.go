package bench

import (
	"slices"
	"testing"
)

// The expectations are Python 3.11's.
func TestPyFindAllLiterals(t *testing.T) {
	tests := []struct {
		s    string
		alts []string
		want []string
	}{
		{"ba", []string{"a", ""}, []string{"", "a", ""}},
		{"ba", []string{"", "a"}, []string{"", "", "a", ""}},
		{"xaab", []string{"ab", "a", ""}, []string{"", "a", "ab", ""}},
		{"abc", []string{"c", ""}, []string{"", "", "c", ""}},
		{"é", []string{""}, []string{"", ""}},
		{"ébb", []string{"b", ""}, []string{"", "b", "b", ""}},
		{"guilty of romance", []string{"guilty of romance", "guilty"}, []string{"guilty of romance"}},
		{"none", []string{"x"}, nil},
	}
	for _, tt := range tests {
		if got := pyFindAllLiterals(tt.s, tt.alts); !slices.Equal(got, tt.want) {
			t.Errorf("pyFindAllLiterals(%q, %q) = %q, want %q", tt.s, tt.alts, got, tt.want)
		}
	}
}

func TestPyLower(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ΑΣ Σ ΑΣ.Α ΑΣ\u0301", "ας σ ασ.α ας\u0301"},
		{"İ", "i\u0307"},
		{"ABC déF", "abc déf"},
	}
	for _, tt := range tests {
		if got := pyLower(tt.in); got != tt.want {
			t.Errorf("pyLower(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPyStrings(t *testing.T) {
	if got := pyStrip("\v\x1c a \u3000"); got != "a" {
		t.Errorf("pyStrip = %q, want %q", got, "a")
	}
	if got := pyEscapedLen("a b+c|é"); got != 10 { // len(re.escape("a b+c|é"))
		t.Errorf("pyEscapedLen = %d, want 10", got)
	}
	if got := removeUnicodePunct("a.b—c«d»+"); got != "abcd+" {
		t.Errorf("removeUnicodePunct = %q", got)
	}
	if got := removeASCIIPunct("(c)—."); got != "c—" {
		t.Errorf("removeASCIIPunct = %q", got)
	}
}
