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
