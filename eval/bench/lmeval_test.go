package bench

import (
	"slices"
	"testing"
)

// The expectations were computed with lm-eval 0.4.13's RegexFilter and
// MultiChoiceRegexFilter, configured as its GPQA tasks configure them.
func TestLMEvalStrict(t *testing.T) {
	tests := []struct{ in, want string }{
		{"The answer is (C).", "(C)"},
		{"The answer is (C)", "(C"}, // the lookahead takes the last character
		{"The answer is C", ""},
		{"The answer is \nThe answer is (B).", "(B)"}, // the first with a character after it
		{"the answer is (C).", LMEvalInvalid},         // case matters
		{"The answer is X\nThe answer is (D).", ""},   // the first match counts
		{"The answer is (C) because it fits.", "(C) because it fits"},
		{"The answer is  (A). ", "(A)."},
		{"no", LMEvalInvalid},
		{"The answer is é!", "é"},
		{"The answer is (C)\r\n", "(C)"},
	}
	for _, tt := range tests {
		if got := LMEvalStrict(tt.in); got != tt.want {
			t.Errorf("LMEvalStrict(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLMEvalFlexible(t *testing.T) {
	choices := []string{"Guilty", "Guilty of Romance", "Not guilty", "ΑΣ (sigma)"}
	tests := []struct {
		in      string
		choices []string
		want    string
	}{
		{"I pick (B) then (E).", choices, "(E)"},                            // the last "(X)", any capital
		{"it is guilty of romance!", choices, "(B)"},                        // the longest choice first
		{"Guilty.", choices, "(A)"},                                         //
		{"maybe not guilty, or guilty", choices, "(A)"},                     // the last choice named
		{"Answer: C", choices, "(C)"},                                       // ": X"
		{"Answer:\u00a0D", choices, "(D)"},                                  // Python's \s
		{"answer: c", choices, LMEvalInvalid},                               // ": x" is case-sensitive
		{"nothing here", choices, LMEvalInvalid},                            //
		{"the σ case: ας sigma", choices, "(D)"},                            // str.lower's final sigma
		{"Answer: B or: D", choices, "(D)"},                                 //
		{"(a) lower", choices, LMEvalInvalid},                               // "(x)" is case-sensitive
		{"yes it is", []string{"...", "Yes", "No", "Maybe"}, LMEvalInvalid}, // an empty choice matches last
		{"Answer: A", []string{"...", "Yes", "No", "Maybe"}, "(A)"},
	}
	for _, tt := range tests {
		if got := LMEvalFlexible(tt.in, tt.choices); got != tt.want {
			t.Errorf("LMEvalFlexible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLMEvalExactMatch(t *testing.T) {
	tests := []struct {
		filtered, letter string
		want             bool
	}{
		{"(C)", "C", true},
		{"(c", "C", true},
		{"C.", "C", true},
		{"c\x00", "C", true},
		{"(C) because", "C", false},
		{LMEvalInvalid, "C", false},
		{"", "C", false},
		{"(B)", "C", false},
	}
	for _, tt := range tests {
		if got := LMEvalExactMatch(tt.filtered, tt.letter); got != tt.want {
			t.Errorf("LMEvalExactMatch(%q, %q) = %v, want %v", tt.filtered, tt.letter, got, tt.want)
		}
	}
}

func TestLMEvalChoices(t *testing.T) {
	got := LMEvalChoices([4]string{" a [title] b ", "two  spaces", "three   spaces", "x"})
	want := []string{"a. b", "two spaces", "three  spaces", "x"}
	if !slices.Equal(got, want) {
		t.Errorf("LMEvalChoices = %q, want %q", got, want)
	}
}

func TestSimpleEvalsChoice(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Answer: C", "C", true},
		{"answer :\t$b$", "b", true},        // read, but not the letter (the scorer compares exactly)
		{"Answer: B\nAnswer: C", "B", true}, // the first
		{"Answer: (C)", "", false},
		{"Answer:\nC", "", false},
		{"The answer is C", "", false},
	}
	for _, tt := range tests {
		got, ok := SimpleEvalsChoice(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("SimpleEvalsChoice(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
