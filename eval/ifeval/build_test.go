package ifeval

import (
	"strings"
	"testing"
)

func TestIDs(t *testing.T) {
	ids := IDs()
	if len(ids) != 25 {
		t.Fatalf("len(IDs()) = %d, want 25", len(ids))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			t.Errorf("IDs() not sorted at %d: %q >= %q", i, ids[i-1], ids[i])
		}
	}
	for _, id := range []string{"keywords:existence", "length_constraints:number_words", "detectable_format:json_format",
		"change_case:english_capital", "language:response_language", "startend:quotation", "punctuation:no_comma",
		"combination:repeat_prompt", "combination:two_responses"} {
		if _, ok := registry[id]; !ok {
			t.Errorf("IDs() lacks %q", id)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		id     string
		kwargs map[string]any
		want   []string // substrings of the error
	}{
		{"keywords:nope", nil, []string{`"keywords:nope"`}},
		{"keywords:existence", map[string]any{}, []string{"keywords:existence", `"keywords"`, "missing"}},
		{"keywords:existence", map[string]any{"keywords": []any{}}, []string{`"keywords"`, "empty"}},
		{"keywords:existence", map[string]any{"keywords": []any{"a", 3.0}}, []string{`"keywords"`, "element 1"}},
		{"keywords:existence", map[string]any{"keywords": []any{"(unclosed"}}, []string{`"keywords"`, "(unclosed"}},
		{"keywords:frequency", map[string]any{"keyword": "x", "frequency": 2.0, "relation": "at most"}, []string{`"relation"`, "at most"}},
		{"keywords:frequency", map[string]any{"keyword": "x", "frequency": 2.5, "relation": "at least"}, []string{`"frequency"`, "integer"}},
		{"keywords:frequency", map[string]any{"keyword": "x", "frequency": -1.0, "relation": "at least"}, []string{`"frequency"`, "random"}},
		{"keywords:frequency", map[string]any{"keyword": "x", "frequency": "2", "relation": "at least"}, []string{`"frequency"`, "string"}},
		{"keywords:letter_frequency", map[string]any{"letter": "ab", "let_frequency": 1.0, "let_relation": "at least"}, []string{`"letter"`}},
		{"language:response_language", map[string]any{"language": "xx"}, []string{`"language"`, `"xx"`}},
		{"length_constraints:nth_paragraph_first_word", map[string]any{"num_paragraphs": 2.0, "nth_paragraph": 3.0, "first_word": "a"}, []string{`"nth_paragraph"`}},
		{"length_constraints:nth_paragraph_first_word", map[string]any{"num_paragraphs": 2.0, "nth_paragraph": 0.0, "first_word": "a"}, []string{`"nth_paragraph"`}},
		{"combination:repeat_prompt", map[string]any{"prompt_to_repeat": ""}, []string{`"prompt_to_repeat"`}},
		{"punctuation:no_comma", map[string]any{"num_words": 3.0}, []string{"punctuation:no_comma", `unexpected kwarg "num_words"`, "no kwargs"}},
		{"startend:end_checker", map[string]any{"end_phrase": "x", "extra": "y"}, []string{`unexpected kwarg "extra"`, `"end_phrase"`}},
		{"change_case:capital_word_frequency", map[string]any{"capital_relation": "at least"}, []string{`"capital_frequency"`}},
		{"detectable_format:multiple_sections", map[string]any{"section_spliter": "Sec(", "num_sections": 1.0}, []string{`"section_spliter"`}},
	} {
		_, err := Build(c.id, c.kwargs)
		if err == nil {
			t.Errorf("Build(%q, %v) = nil error, want one containing %q", c.id, c.kwargs, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Build(%q, %v) error %q does not contain %q", c.id, c.kwargs, err, w)
			}
		}
	}
}

func TestBuildAcceptsGoTypesAndNulls(t *testing.T) {
	ins, err := Build("keywords:frequency", map[string]any{"keyword": "war", "frequency": 2, "relation": "at least", "language": nil})
	if err != nil {
		t.Fatal(err)
	}
	if !ins.Check("war and war") || ins.Check("war") {
		t.Errorf("frequency check with Go int kwargs gave the wrong verdicts")
	}
	ins, err = Build("keywords:existence", map[string]any{"keywords": []string{"b", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !ins.Check("A B") || ins.Check("a") {
		t.Errorf("existence check with []string kwargs gave the wrong verdicts")
	}
	// Negative capital_frequency is kept, as the reference keeps it.
	ins, err = Build("change_case:capital_word_frequency", map[string]any{"capital_frequency": -1, "capital_relation": "at least"})
	if err != nil || !ins.Check("none") {
		t.Errorf("capital_word_frequency with -1: err %v, want a check that always passes", err)
	}
}

func TestCheckStrictBlank(t *testing.T) {
	ins, err := Build("punctuation:no_comma", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ins.Check(" \n ") {
		t.Errorf("Check(blank) = false, want true (no comma)")
	}
	if CheckStrict(ins, " \n ") || CheckLoose(ins, " \n ") {
		t.Errorf("CheckStrict/CheckLoose(blank) = true, want false (evaluation_lib rejects blank responses)")
	}
}

// TestReferenceEdgeKwargs: kwargs of 0, a letter outside a–z, and case
// folds beyond Go's (?i), with the verdicts the reference gives (worked out
// from instructions.py: a count kwarg is drawn at random only when None or
// negative, so 0 is a real threshold; nth_paragraph is drawn from
// randint(1, num_paragraphs+1), which is 1 for num_paragraphs 0; the letter
// counted is letter.strip().lower() in Counter(value.lower()); keywords are
// matched with re.IGNORECASE).
func TestReferenceEdgeKwargs(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		kwargs   map[string]any
		response string
		want     bool
	}{
		{"0 placeholders", "detectable_content:number_placeholders", map[string]any{"num_placeholders": 0.0}, "no brackets", true},
		{"0 bullets, none", "detectable_format:number_bullet_lists", map[string]any{"num_bullets": 0.0}, "plain text", true},
		{"0 bullets, two", "detectable_format:number_bullet_lists", map[string]any{"num_bullets": 0.0}, "* a\n* b", false},
		{"0 highlights", "detectable_format:number_highlighted_sections", map[string]any{"num_highlights": 0.0}, "plain", true},
		{"0 sections", "detectable_format:multiple_sections", map[string]any{"section_spliter": "Section", "num_sections": 0.0}, "plain", true},
		{"0 paragraphs, one", "length_constraints:number_paragraphs", map[string]any{"num_paragraphs": 0.0}, "one paragraph", false},
		{"0 paragraphs, only a divider", "length_constraints:number_paragraphs", map[string]any{"num_paragraphs": 0.0}, "***", true},
		{"less than 0 words", "length_constraints:number_words", map[string]any{"num_words": 0.0, "relation": "less than"}, "a b", false},
		{"at least 0 words", "length_constraints:number_words", map[string]any{"num_words": 0.0, "relation": "at least"}, "a b", true},
		{"less than 0 sentences", "length_constraints:number_sentences", map[string]any{"num_sentences": 0.0, "relation": "less than"}, "A b.", false},
		{"keyword less than 0 times", "keywords:frequency", map[string]any{"keyword": "x", "frequency": 0.0, "relation": "less than"}, "none", false},
		{"letter at least 0", "keywords:letter_frequency", map[string]any{"letter": "z", "let_frequency": 0.0, "let_relation": "at least"}, "none", true},
		{"capital words at least 0", "change_case:capital_word_frequency", map[string]any{"capital_frequency": 0.0, "capital_relation": "at least"}, "none", true},
		{"0 paragraphs, nth 0", "length_constraints:nth_paragraph_first_word", map[string]any{"num_paragraphs": 0.0, "nth_paragraph": 0.0, "first_word": "alpha"}, "Alpha.", false},
		{"0 paragraphs, nth 3", "length_constraints:nth_paragraph_first_word", map[string]any{"num_paragraphs": 0.0, "nth_paragraph": 3.0, "first_word": "alpha"}, "Alpha.", false},
		{"0 paragraphs, no nth", "length_constraints:nth_paragraph_first_word", map[string]any{"num_paragraphs": 0.0, "first_word": "alpha"}, "Alpha.", false},
		{"letter é", "keywords:letter_frequency", map[string]any{"letter": "é", "let_frequency": 2.0, "let_relation": "at least"}, "Été", true},
		{"letter 1", "keywords:letter_frequency", map[string]any{"letter": "1", "let_frequency": 2.0, "let_relation": "at least"}, "1 and 1", true},
		{"letter İ lowers to two characters", "keywords:letter_frequency", map[string]any{"letter": "İ", "let_frequency": 1.0, "let_relation": "at least"}, "iii İİ", false},
		{"letter space strips to nothing", "keywords:letter_frequency", map[string]any{"letter": " ", "let_frequency": 1.0, "let_relation": "at least"}, "a b c", false},
		{"letter A", "keywords:letter_frequency", map[string]any{"letter": "A", "let_frequency": 2.0, "let_relation": "at least"}, "Aa", true},
		{"keyword i finds ı", "keywords:existence", map[string]any{"keywords": []any{"kız"}}, "KIZ", true},
		{"keyword finds İ", "keywords:existence", map[string]any{"keywords": []any{"istanbul"}}, "İSTANBUL", true},
		{"keyword ﬅ finds ﬆ", "keywords:frequency", map[string]any{"keyword": "ﬅ", "frequency": 2.0, "relation": "at least"}, "ﬆ ﬅ", true},
		{"forbidden word with İ", "keywords:forbidden_words", map[string]any{"forbidden_words": []any{"izmir"}}, "İZMİR is nice", false},
		{"Kelvin sign", "keywords:existence", map[string]any{"keywords": []any{"kelvin"}}, "\u212aELVIN", true},
	}
	for _, tt := range tests {
		ins, err := Build(tt.id, tt.kwargs)
		if err != nil {
			t.Errorf("%s: Build: %v", tt.name, err)
			continue
		}
		if got := CheckStrict(ins, tt.response); got != tt.want {
			t.Errorf("%s: %s%v on %q = %v, want %v (the reference's)", tt.name, tt.id, tt.kwargs, tt.response, got, tt.want)
		}
	}
}
