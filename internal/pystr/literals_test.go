package pystr

import (
	"slices"
	"testing"
)

// The expectations are Python 3.11's.
func TestFindAllLiterals(t *testing.T) {
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
		if got := FindAllLiterals(tt.s, tt.alts); !slices.Equal(got, tt.want) {
			t.Errorf("FindAllLiterals(%q, %q) = %q, want %q", tt.s, tt.alts, got, tt.want)
		}
	}
}

func TestLiterals(t *testing.T) {
	for _, tt := range []struct {
		name, got, want string
	}{
		{"RemovePunct", RemovePunct("a.b—c«d»+"), "abcd+"},
		{"RemoveASCIIPunct", RemoveASCIIPunct("(c)—."), "c—"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"a b+c|é", 10}, // len(re.escape("a b+c|é"))
		{"", 0},
		{"\t#~&", 8},
	} {
		if got := EscapedLen(tt.s); got != tt.want {
			t.Errorf("EscapedLen(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}
