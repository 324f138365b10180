package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The synthetic items of testdata/gpqa_synthetic.csv (never real GPQA).
var syntheticGPQA = []GPQAItem{
	{ID: "recSYNTH00000001", Question: "Synthetic question one.\nA spider walks across a table. How many legs does it have?",
		Correct: "8", Incorrect: [3]string{"6", "10", "4"}, Domain: "Biology", Subdomain: "Synthetic Biology"},
	{ID: "recSYNTH00000002", Question: "Synthetic question two, with \"quotes\", commas, and\ntwo more lines\nof text.",
		Correct: "100 degrees Celsius", Incorrect: [3]string{"90 degrees Celsius", "110 degrees Celsius", "80 degrees Celsius"},
		Domain: "Physics", Subdomain: "Synthetic Physics"},
	{ID: "recSYNTH00000003", Question: "Synthetic question three: what is 2 + 2?",
		Correct: "4", Incorrect: [3]string{"3", "5", "22"}, Domain: "Chemistry", Subdomain: "Synthetic Math"},
	{ID: "recSYNTH00000004", Question: "Synthetic question four: which symbol denotes sodium?",
		Correct: "Na", Incorrect: [3]string{"N", "S", "K"}, Domain: "Chemistry", Subdomain: "Synthetic Chemistry"},
}

func TestLoadGPQACSV(t *testing.T) {
	items, err := LoadGPQA("testdata/gpqa_synthetic.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(items, syntheticGPQA) {
		t.Errorf("LoadGPQA(csv) =\n%+v\nwant\n%+v", items, syntheticGPQA)
	}
}

func TestLoadGPQAParquet(t *testing.T) {
	// The Hugging Face parquet variant: same column names.
	rows := make([]hfGPQARow, len(syntheticGPQA))
	for i, it := range syntheticGPQA {
		rows[i] = hfGPQARow{Question: ptr(it.Question), Correct: ptr(it.Correct), Incorrect1: ptr(it.Incorrect[0]),
			Incorrect2: ptr(it.Incorrect[1]), Incorrect3: ptr(it.Incorrect[2]), RecordID: ptr(it.ID), Domain: ptr(it.Domain)}
	}
	items, err := LoadGPQA(writeParquet(t, "gpqa_diamond.parquet", rows))
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		want := syntheticGPQA[i]
		want.Subdomain = "" // not in this file
		if items[i] != want {
			t.Errorf("LoadGPQA(parquet)[%d] = %+v, want %+v", i, items[i], want)
		}
	}
}

func TestGPQAItemsErrors(t *testing.T) {
	full := func() map[string]any {
		return map[string]any{"Question": "q", "Correct Answer": "c", "Incorrect Answer 1": "i1",
			"Incorrect Answer 2": "i2", "Incorrect Answer 3": "i3", "Record ID": "r1"}
	}
	noCorrect := full()
	delete(noCorrect, "Correct Answer")
	blank := full()
	blank["Incorrect Answer 3"] = "  "
	tests := []struct {
		recs []Record
		want string
	}{
		{[]Record{{File: "g.csv", Row: 1, Line: 2, Fields: noCorrect}}, `g.csv row 1 (line 2): missing or empty column "Correct Answer"`},
		{[]Record{{File: "g.csv", Row: 1, Line: 2, Fields: blank}}, `missing or empty column "Incorrect Answer 3"`},
		{[]Record{{File: "g.csv", Row: 1, Line: 2, Fields: full()}, {File: "g.csv", Row: 2, Line: 3, Fields: full()}},
			`g.csv row 2 (line 3): duplicate ID "r1" (first at g.csv row 1 (line 2))`},
	}
	for _, tt := range tests {
		_, err := GPQAItems(tt.recs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("GPQAItems error = %v, want it to contain %q", err, tt.want)
		}
	}

	// Without a Record ID column the ID is a hash of the question: stable.
	f := full()
	delete(f, "Record ID")
	a, err := GPQAItems([]Record{{Fields: f}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GPQAItems([]Record{{Fields: f}})
	if !strings.HasPrefix(a[0].ID, "gpqa-") || len(a[0].ID) != len("gpqa-")+12 || a[0].ID != b[0].ID {
		t.Errorf("fallback IDs %q, %q, want equal gpqa-<12 hex>", a[0].ID, b[0].ID)
	}
}

func TestShuffleGPQA(t *testing.T) {
	it := syntheticGPQA[3]
	q := ShuffleGPQA(it, 7, 0)
	if q2 := ShuffleGPQA(it, 7, 0); q2 != q {
		t.Errorf("ShuffleGPQA not deterministic: %+v then %+v", q, q2)
	}
	// The choices are the four answers, and the letter points at the correct one.
	got := slices.Clone(q.Choices[:])
	slices.Sort(got)
	want := []string{it.Correct, it.Incorrect[0], it.Incorrect[1], it.Incorrect[2]}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ShuffleGPQA choices %q, want a permutation of %q", q.Choices, want)
	}
	if i := strings.Index(Letters, q.Correct); i < 0 || q.Choices[i] != it.Correct {
		t.Errorf("ShuffleGPQA correct letter %q points at %q, want %q", q.Correct, q.Choices[max(i, 0)], it.Correct)
	}

	// Over many items and runs every one of the 24 orders occurs, the correct
	// letter is spread evenly, and runs and seeds reshuffle.
	perms := map[[4]string]bool{}
	letters := map[string]int{}
	sameRun, sameSeed := 0, 0
	const n = 2400
	for i := range n {
		it := GPQAItem{ID: fmt.Sprintf("rec%05d", i), Correct: "c", Incorrect: [3]string{"x", "y", "z"}}
		q0 := ShuffleGPQA(it, 1, 0)
		perms[q0.Choices] = true
		letters[q0.Correct]++
		if ShuffleGPQA(it, 1, 1).Choices == q0.Choices {
			sameRun++
		}
		if ShuffleGPQA(it, 2, 0).Choices == q0.Choices {
			sameSeed++
		}
	}
	if len(perms) != 24 {
		t.Errorf("ShuffleGPQA reached %d of 24 orders", len(perms))
	}
	for _, l := range []string{"A", "B", "C", "D"} {
		// Expected 600 each; a fair shuffle lands within ±100 (over 4 SD).
		if c := letters[l]; c < 500 || c > 700 {
			t.Errorf("correct letter %s in %d of %d items, want about %d", l, c, n, n/4)
		}
	}
	// A fresh shuffle repeats the order 1 time in 24 (100 of 2400).
	if sameRun > 200 || sameSeed > 200 {
		t.Errorf("orders repeated across runs %d and seeds %d times of %d, want about %d", sameRun, sameSeed, n, n/24)
	}
}

func TestGPQAPrompt(t *testing.T) {
	q := GPQAQuestion{Question: "What is 2 + 2?", Choices: [4]string{"3", "4", "5", "22"}, Correct: "B"}
	want := "Answer the following multiple choice question. The last line of your response should be of the following " +
		"format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think step by step before answering.\n" +
		"\n" +
		"What is 2 + 2?\n" +
		"\n" +
		"A) 3\n" +
		"B) 4\n" +
		"C) 5\n" +
		"D) 22"
	if got := q.Prompt(); got != want {
		t.Errorf("Prompt() =\n%s\nwant\n%s", got, want)
	}

	qs := GPQAQuestions(syntheticGPQA, 3, 2)
	for i, q := range qs {
		sq := ShuffleGPQA(syntheticGPQA[i], 3, 2)
		if q.ID != syntheticGPQA[i].ID || q.Run != 2 || q.Expected != sq.Correct || q.Prompt != sq.Prompt() {
			t.Errorf("GPQAQuestions[%d] = %+v, want the shuffle of item %q", i, q, syntheticGPQA[i].ID)
		}
	}
}

func TestExtractChoice(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"Let me think.\nAnswer: C", "C"},
		{"answer: b", "B"},
		{"ANSWER:D", "D"},
		{"Answer: $A$", "A"},
		{"Answer: (B)", "B"},
		{"Final Answer: C.", "C"},
		{"**Answer: C**", "C"},
		{"**Answer:** D", "D"},
		{"__Answer__: A", "A"},
		{"Answer: `B`", "B"},
		{"Answer: \\text{C}", "C"},
		{"Answer: \\textbf{(A)}", "A"},
		{"So the answer is (C).", "C"},
		{"Therefore the correct answer is B", "B"},
		{"the answer is option D", "D"},
		{"$\\boxed{C}$", "C"},
		{"\\boxed{(a)}", "A"},
		{"\\boxed{\\text{B}}", "B"},
		{"Answer: A\nHmm, no, wait.\nAnswer: D", "D"}, // the last one counts
		{"The answer is B.\n\n\\boxed{C}", "C"},
		{"\\boxed{C} but then Answer: A", "A"},
		{"Answer: C because of symmetry.", "C"},
		{"The answer is (b) since...", "B"}, // bracketed lower case
		{"answer is c.", "C"},               // lower case alone on its line
		{"The answer is a bit tricky.", ""}, // "a" is a word here
		{"The answer is a bit tricky.\nAnswer: B", "B"},
		{"Answer: Actually I am not sure.", ""}, // "A" inside a word
		{"Answer: E", ""},                       // not a choice
		{"I choose C.", "C"},
		{"Comparing (A) with (B), I would pick (D).", "D"},
		{"I'll go with option b.", "B"},
		{"Option D is correct.", "D"},
		{"So (C) is the correct answer.", "C"},
		{"Option A is not correct. Answer: B", "B"},
		{"Reasoning about (A) and (B).\n\n(C)", "C"}, // a last line of the letter alone
		{"Reasoning.\n\n**D.**", "D"},
		{"Reasoning.\nA", "A"},
		{"A) one\nB) two", ""}, // a list of choices, not an answer
		{"Answer: B or C", ""}, // two answers
		{"Answer: (B)/(C)", ""},
		{"Answer: B and D", ""},
		{"Answer: B or C\nAnswer: C", "C"}, // the last statement is one answer
		{"Answer: C, since A and B fail.", "C"},
		{"Choosing (C) is tempting.", ""}, // no answer statement
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := ExtractChoice(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("ExtractChoice(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.want != "")
		}
	}
}

func TestStripThinking(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<think>Answer: A</think>Answer: B", "Answer: B"},
		{"reasoning without an opening tag</think>\n\nAnswer: C", "\n\nAnswer: C"},
		{"<think>\n\n</think>\n\nAnswer: D", "\n\nAnswer: D"},
		{"<think>cut off while thinking, Answer: A", ""},
		{"plain Answer: B", "plain Answer: B"},
		{"<think>a</think>x<think>b</think>y", "y"},
	}
	for _, tt := range tests {
		if got := StripThinking(tt.in); got != tt.want {
			t.Errorf("StripThinking(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
