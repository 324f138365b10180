package bench

import (
	"strings"
	"testing"
)

func TestExtractBoxed(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`\boxed{33}`, "33", true},
		{`so $\boxed{033}$.`, "033", true},
		{`\boxed{1} then \boxed{2}`, "2", true},
		{`\boxed{\frac{1}{2}}`, `\frac{1}{2}`, true},
		{`\boxed {7}`, "7", true},
		{`\fbox{8}`, "8", true},
		{`\boxed{\{1,2\}}`, `\{1,2\}`, true},             // escaped braces do not count
		{`\boxed{5} and a cut-off \boxed{12`, "5", true}, // the last complete one
		{`\boxed 5`, "5", true},                          // no braces: a number
		{`\boxed 73.`, "73", true},
		{`so \boxed16.0 it is`, "16.0", true},
		{`\boxed{4} then \boxed 7x`, "4", true}, // 7x is no number
		{`\boxed 3/4`, "", false},
		{`\boxed 1,234`, "", false},
		{`\boxed \pi`, "", false},
		{`\boxed 2^{10}`, "", false},
		{`no box`, "", false},
		{`\boxed{`, "", false},
	}
	for _, tt := range tests {
		got, ok := ExtractBoxed(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ExtractBoxed(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseInteger(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"33", 33, true},
		{"033", 33, true},
		{"000", 0, true},
		{" 204 ", 204, true},
		{"$204$", 204, true},
		{"1,000", 1000, true},
		{"1{,}000", 1000, true},
		{"12,345,678", 12345678, true},
		{`1\,000`, 1000, true},
		{"1 000", 1000, true},
		{"1, 23", 0, false},  // a list, not 123
		{"1,23", 0, false},   // not a thousands separator
		{"1,0000", 0, false}, // nor this
		{`1,\,234`, 0, false},
		{"16.0", 16, true}, // a fraction of zeros
		{"16.", 16, true},
		{"1,000.00", 1000, true},
		{`\$154`, 154, true},
		{`\text{999}`, 999, true},
		{`\textbf{ 25 }`, 25, true},
		{"{33}", 33, true},
		{"-5", -5, true},
		{"33.5", 0, false},
		{`\frac{1}{2}`, 0, false},
		{"x = 3", 0, false},
		{"3^2", 0, false},
		{"", 0, false},
		{"99999999999999999999", 0, false}, // overflow
	}
	for _, tt := range tests {
		got, ok := ParseInteger(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInteger(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestAnswerInteger(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"467", 467, true},
		{`104 \text{ cm}`, 104, true},
		{`104\,\mathrm{cm}^2`, 104, true},
		{`12 \text{ square units}`, 12, true},
		{`36\%`, 36, true},
		{"36 %", 36, true},
		{`382^\circ`, 382, true},
		{`382^{\circ}`, 382, true},
		{"382°", 382, true},
		{`40^\circ \text{F}`, 40, true},
		{`\$154`, 154, true},
		{"n = 467", 467, true},
		{"m+n=467", 467, true},
		{"p + q + r = 12", 12, true},
		{"a_1 = 5", 5, true},
		{`a_{10} = 5`, 5, true},
		{`\displaystyle 7`, 7, true},
		{"16.0", 16, true},
		{"1, 23", 0, false},
		{"2x = 10", 0, false}, // x is 5: the right side is not the answer
		{"x = 3 or x = 5", 0, false},
		{"a = b = 4", 0, false},
		{`3 \text{ or more}`, 0, false},
		{`3 \text{ or } 5`, 0, false},
		{"12 ways", 0, false}, // a bare word may be a variable
		{`2\pi`, 0, false},
		{`\frac{24}{2}`, 12, true},
		{`\dfrac{7}{1}`, 7, true},
		{`\frac{1}{2}`, 0, false},
		{`\frac{1}{0}`, 0, false},
		{"16.5", 0, false},
	}
	for _, tt := range tests {
		got, ok := AnswerInteger(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("AnswerInteger(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestExtractAIMEAnswer(t *testing.T) {
	tests := []struct {
		in     string
		n      int64
		text   string
		wantOK bool
	}{
		{`The answer is $\boxed{033}$.`, 33, "033", true},
		{`\boxed{2^{10}}`, 0, "2^{10}", false},
		{`so $\boxed{n = 467}$`, 467, "n = 467", true},
		{`\boxed{1, 23}`, 0, "1, 23", false},
		{`\boxed 7.`, 7, "7", true},
		{`no box: 24`, 0, "", false},
		{"so the answer is 24.", 24, "24", true},
		{"**Final Answer:** $502$\n", 502, "502", true},
		{"The answer is 3, then 4.\nAnswer: 7", 7, "7", true},
		{"The answer is 24 if x is even.", 0, "", false}, // not the end of its line
		{`Answer: 7, but \boxed{3.5}`, 0, "3.5", false},  // a box, not an integer
		{`The answer is 7. \boxed{`, 0, "", false},       // a box was begun
		{"The answer is 1, 23.", 0, "", false},
	}
	for _, tt := range tests {
		n, text, ok := ExtractAIMEAnswer(tt.in)
		if n != tt.n || text != tt.text || ok != tt.wantOK {
			t.Errorf("ExtractAIMEAnswer(%q) = %d, %q, %v, want %d, %q, %v", tt.in, n, text, ok, tt.n, tt.text, tt.wantOK)
		}
	}
}

func TestLoadAIME(t *testing.T) {
	tests := []struct {
		path string
		want []AIMEItem
	}{
		{"testdata/aime_h4.jsonl", []AIMEItem{
			{ID: "60", Year: 2024, Problem: "Synthetic problem one: compute 3 * 11.", Answer: 33},
			{ID: "61", Year: 2024, Problem: "Synthetic problem two: compute 2^10 - 1000.", Answer: 24},
			{ID: "62", Year: 2024, Problem: "Synthetic problem three: compute 999 - 0.", Answer: 999},
		}},
		{"testdata/aime_maxwell.jsonl", []AIMEItem{
			{ID: "2024-I-1", Problem: "Synthetic problem one: compute 3 * 11.", Answer: 33},
			{ID: "2024-I-2", Problem: "Synthetic problem two: compute 2^10 - 1000.", Answer: 24},
		}},
	}
	for _, tt := range tests {
		got, err := LoadAIME(tt.path)
		if err != nil {
			t.Errorf("LoadAIME(%q): %v", tt.path, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("LoadAIME(%q) = %d items, want %d", tt.path, len(got), len(tt.want))
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("LoadAIME(%q)[%d] = %+v, want %+v", tt.path, i, got[i], tt.want[i])
			}
		}
	}

	// opencompass-style files have no id: a hash of the problem stands in.
	got, err := LoadAIME("testdata/aime_opencompass.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Answer != 33 || !strings.HasPrefix(got[0].ID, "aime-") || got[0].ID == got[1].ID {
		t.Errorf("LoadAIME(opencompass) = %+v", got)
	}

	// Parquet with int64 answers, as the HF conversions have.
	type pqAIME struct {
		ID      int64  `parquet:"id"`
		Problem string `parquet:"problem"`
		Answer  int64  `parquet:"answer"`
		Year    int64  `parquet:"year"`
	}
	p := writeParquet(t, "aime.parquet", []pqAIME{{ID: 1, Problem: "p", Answer: 7, Year: 2025}})
	got, err = LoadAIME(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := (AIMEItem{ID: "1", Year: 2025, Problem: "p", Answer: 7}); len(got) != 1 || got[0] != want {
		t.Errorf("LoadAIME(parquet) = %+v, want [%+v]", got, want)
	}
}

func TestAIMEItemsErrors(t *testing.T) {
	tests := []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"answer": "3"}, "a.jsonl row 1 (line 1): no problem"},
		{map[string]any{"problem": "p"}, "no answer"},
		{map[string]any{"problem": "p", "answer": "3/4"}, `column "answer" = "3/4" is not an integer`},
		{map[string]any{"problem": "p", "answer": "3", "year": "twenty"}, "not a year"},
	}
	for _, tt := range tests {
		_, err := AIMEItems([]Record{{File: "a.jsonl", Row: 1, Line: 1, Fields: tt.fields}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("AIMEItems(%v) error = %v, want it to contain %q", tt.fields, err, tt.want)
		}
	}
	dup := map[string]any{"id": "x", "problem": "p", "answer": "1"}
	if _, err := AIMEItems([]Record{{Fields: dup}, {Fields: dup}}); err == nil || !strings.Contains(err.Error(), `duplicate ID "x"`) {
		t.Errorf("AIMEItems(duplicate) error = %v", err)
	}
}

func TestAIMEPrompt(t *testing.T) {
	it := AIMEItem{ID: "1", Problem: "Find 1+1.", Answer: 2}
	want := "Find 1+1.\nPlease reason step by step, and put your final answer within \\boxed{}."
	if got := it.Prompt(); got != want {
		t.Errorf("Prompt() = %q, want %q", got, want)
	}
	qs := AIMEQuestions([]AIMEItem{it}, 3)
	if len(qs) != 1 || qs[0] != (Question{ID: "1", Run: 3, Prompt: want, Expected: "2"}) {
		t.Errorf("AIMEQuestions = %+v", qs)
	}
}
