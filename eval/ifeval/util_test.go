package ifeval

import (
	"reflect"
	"testing"
)

func TestCountWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		// instructions_util_test.
		{"word1, word2, word3, word4.", 4},
		{"\n      Bard can you tell me which is the best optimization method for the\n      transition from an hydro-thermal system to an hydro-renewables system", 24},
		{"\n      Hyphenated-word has two word counts.\n      ", 6},
		// NLTK 3.10 compiles \w+ with the regex module: marks join words,
		// '²' does not.
		{"हिन्दी भाषा", 2},
		{"x² y", 2},
		{"snake_case it's", 3},
		{"", 0},
	} {
		if got := countWords(c.in); got != c.want {
			t.Errorf("countWords(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestSplitIntoSentences uses instructions_util_test's cases.
func TestSplitIntoSentences(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"\n  Google is a technology company. It was founded in 1998 by Larry Page\nand Sergey Brin. Google's mission is to organize the world's information\nand make it universally accessible and useful.\n  ",
			[]string{"Google is a technology company.", "It was founded in 1998 by Larry Page and Sergey Brin.",
				"Google's mission is to organize the world's information and make it universally accessible and useful."}},
		{"\n  The U.S.A has many Ph.D. students. They will often haven a .com website\nsharing the research that they have done.\n  ",
			[]string{"The U.S.A has many Ph.D. students.", "They will often haven a .com website sharing the research that they have done."}},
		{`He said "stop." Dr. No left... Then: what?!`, []string{`He said "stop".`, "Dr. No left...", "Then: what?", "!"}},
		{"Mr. A.B.C. He left. Acme Inc. They won. x.y.z. It's 3.5 ok.com done. a. b",
			[]string{"Mr. A.B.C.", "He left.", "Acme Inc", "They won.", "x.y.z. It's 3.5 ok.com done.", "a. b"}},
	} {
		if got := splitIntoSentences(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitIntoSentences(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPyJSONValid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"a": 1}`, true},
		{` [1, -2.5e-3, true, false, null, "x\u00e9\n"] `, true},
		{`"s"`, true},
		{`0`, true},
		{`-0.0E+1`, true},
		{`NaN`, true},
		{`[Infinity, -Infinity]`, true},
		{`{}`, true},
		{`[]`, true},
		{`{"a": {"b": [[], {}]}}`, true},
		{"\"\\ud800\"", true},
		{``, false},
		{`-NaN`, false},
		{`01`, false},
		{`1.`, false},
		{`.5`, false},
		{`1e`, false},
		{`[1,]`, false},
		{`{"a":1,}`, false},
		{`{a: 1}`, false},
		{`{'a': 1}`, false},
		{"\"tab\there\"", false},
		{`"bad \x escape"`, false},
		{`"\u12G4"`, false},
		{`[1] [2]`, false},
		{`nul`, false},
		{"\ufeff{}", false},
		{`"unterminated`, false},
		{`{"a" 1}`, false},
		{`tru`, false},
	} {
		if got := pyJSONValid(c.in); got != c.want {
			t.Errorf("pyJSONValid(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
