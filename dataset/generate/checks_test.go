package generate

import (
	"math"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Do you tell   them?", "do you tell them"},
		{"  \u201cYour friend\u2014really?\u201d ", "your friend really"},
		{"Don't\tSTOP!!\n", "don t stop"},
		{"...", ""},
		{"caf\u00e9 \u00c9t\u00e9", "caf\u00e9 \u00e9t\u00e9"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{`  "You find a wallet. Do you keep it?"  `, "You find a wallet. Do you keep it?"},
		{"\u201cYou find a wallet. Do you keep it?\u201d", "You find a wallet. Do you keep it?"},
		{`"Quoted" start and "quoted" end"`, `"Quoted" start and "quoted" end"`},
		{"two  spaces\tand a tab", "two spaces and a tab"},
		{"line one\n  line two ", "line one\nline two"},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJaccard(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{"a b c d", "a b c d", 1},
		{"A, b. C d!", "a b c d", 1},
		{"a b c d", "a b c e", 1.0 / 3},     // {abc, bcd} vs {abc, bce}
		{"a b c d e", "a b c d f", 2.0 / 4}, // 2 shared of 4 distinct
		{"a b c", "d e f", 0},
		{"a b", "a b", 1}, // shorter than a shingle: the whole text
	}
	for _, tt := range tests {
		if got := Jaccard(tt.a, tt.b); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Jaccard(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestIndexDuplicates(t *testing.T) {
	const base = "Your best friend confides they are cheating on their partner, who is also your close friend. Do you maintain loyalty to the confessor or inform the other party?"
	tests := []struct {
		name      string
		threshold float64
		text      string
		want      string
	}{
		{"exact", 0.8, base, ReasonDuplicate},
		{"case, punctuation and spaces", 0.8, strings.ToUpper(strings.ReplaceAll(base, " ", "  ")) + "!!", ReasonDuplicate},
		{"one word changed", 0.7, strings.Replace(base, "close", "dear", 1), ReasonNearDuplicate},
		{"one word added", 0.7, strings.Replace(base, "cheating", "secretly cheating", 1), ReasonNearDuplicate},
		{"paraphrase", 0.8, "Your sister admits she is seeing someone behind her husband's back, and he is a good friend of yours. Should you keep her secret or tell him?", ""},
		{"different", 0.8, "At the supermarket checkout the cashier gives you too much change. Do you point it out or let it pass?", ""},
		{"exact only: one word changed", 1, strings.Replace(base, "close", "dear", 1), ""},
		{"exact only: exact", 1, base, ReasonDuplicate},
		{"low threshold: paraphrase with shared phrases", 0.2, strings.Replace(base, "Your best friend confides", "Your cousin tells you", 1), ReasonNearDuplicate},
	}
	for _, tt := range tests {
		x := NewIndex(tt.threshold)
		x.Add(base)
		x.Add("A hospital has one ventilator left and two critical patients. How do you allocate the resource?")
		m := x.Check(tt.text)
		if m.Reason != tt.want {
			t.Errorf("%s: Check(%q) = %q (similarity %.2f), want %q", tt.name, tt.text, m.Reason, m.Similarity, tt.want)
		}
		if m.Reason != "" && m.Similar != base {
			t.Errorf("%s: Check matched %q, want the base text", tt.name, m.Similar)
		}
		if m.Reason == ReasonNearDuplicate && (m.Similarity < tt.threshold || m.Similarity >= 1) {
			t.Errorf("%s: similarity %v, want in [%v, 1)", tt.name, m.Similarity, tt.threshold)
		}
	}
}

func TestIndexSimilarityMatchesJaccard(t *testing.T) {
	texts := []string{
		"You notice a coworker consistently takes credit for shared ideas in meetings. Do you confront them privately?",
		"You notice a colleague regularly takes credit for shared ideas in team meetings. Do you confront them privately?",
		"A neighbour keeps parking in your spot. Do you leave a note or talk to them?",
	}
	x := NewIndex(0.01)
	x.Add(texts[0])
	for _, q := range texts[1:] {
		m := x.Check(q)
		want := Jaccard(texts[0], q)
		if want > 0 && math.Abs(m.Similarity-want) > 1e-12 {
			t.Errorf("Check(%q).Similarity = %v, want Jaccard %v", q, m.Similarity, want)
		}
	}
}

func TestCheckLength(t *testing.T) {
	tests := []struct {
		words   int
		wantErr bool
	}{{14, true}, {15, false}, {120, false}, {121, true}}
	for _, tt := range tests {
		s := strings.TrimSpace(strings.Repeat("word ", tt.words))
		if err := CheckLength(s, 15, 120); (err != nil) != tt.wantErr {
			t.Errorf("CheckLength(%d words) = %v, want error %v", tt.words, err, tt.wantErr)
		}
	}
}

func TestCheckForm(t *testing.T) {
	const good = "A hospital has one ventilator left and two critical patients. How do you allocate the resource?"
	tests := []struct {
		kind, text string
		ok         bool
	}{
		{KindDilemmas, good, true},
		{KindDilemmas, "Your friend asks you to lie. \u201cWill you?\u201d", true},
		{KindDilemmas, "A hospital has one ventilator left and two critical patients. Allocate it.", false},
		{KindDilemmas, "A hospital has one ventilator left.\nHow do you allocate it?", false},
		{KindDilemmas, "**Dilemma:** A hospital has one ventilator. How do you allocate it?", false},
		{KindDilemmas, "- A hospital has one ventilator. How do you allocate it?", false},
		{KindDilemmas, "# Title A hospital has one ventilator. How do you allocate it?", false},
		{KindDilemmas, "Dilemma 3: A hospital has one ventilator. How do you allocate it?", false},
		{KindDilemmas, "Here is a dilemma: a hospital has one ventilator. How do you allocate it?", false},
		{KindDilemmas, "[Name], a nurse, has one ventilator left. How does [Name] allocate it?", false},
		{KindDilemmas, "Choose: 1. the parent 2. the scientist. Who gets the ventilator?", false},
		{KindDilemmas, "Who gets it? The parent? The scientist? Or neither?", false},
		{KindDilemmas, "You owe 2. Your friend owes 3 dollars to the shop. Do you pay for both?", true},
		{KindDilemmas, "", false},
		{KindOpenEnded, "Imagine you have just moved to a vibrant town. Outline a plan to find a new hobby.", true},
		{KindOpenEnded, "Imagine you have just moved to a vibrant town. What hobby would you pick?", true},
		{KindOpenEnded, "Imagine you have just moved to a vibrant town and want a hobby", false},
		{KindOpenEnded, "Plan a trip: `day 1` museums.", false},
	}
	for _, tt := range tests {
		err := CheckForm(tt.kind, tt.text)
		if (err == nil) != tt.ok {
			t.Errorf("CheckForm(%s, %q) = %v, want ok %v", tt.kind, tt.text, err, tt.ok)
		}
	}
}

func TestParseItems(t *testing.T) {
	tests := []struct {
		name, content string
		want          int
		wantErr       bool
	}{
		{"object", `{"items":[{"category":"professional","task":"x"},{"category":"interpersonal","task":"y"}]}`, 2, false},
		{"fenced", "Sure:\n```json\n{\"items\":[{\"category\":\"professional\",\"task\":\"x\"}]}\n```", 1, false},
		{"prose", `Here you go: {"items":[{"category":"professional","task":"x"}]} Enjoy.`, 1, false},
		{"bare array", `[{"category":"professional","task":"x"}]`, 1, false},
		{"empty items", `{"items":[]}`, 0, true},
		{"no json", `I cannot help with that.`, 0, true},
		{"truncated", `{"items":[{"category":"professional","task":"x"`, 0, true},
	}
	for _, tt := range tests {
		got, err := parseItems(tt.content)
		if (err != nil) != tt.wantErr || len(got) != tt.want {
			t.Errorf("%s: parseItems(%q) = %d items, %v; want %d, error %v", tt.name, tt.content, len(got), err, tt.want, tt.wantErr)
		}
	}
}

func TestAllocate(t *testing.T) {
	tests := []struct {
		n       int
		weights []float64
		want    []int
	}{
		{100, []float64{0.3, 0.4, 0.3}, []int{30, 40, 30}},
		{40, []float64{0.3, 0.4, 0.3}, []int{12, 16, 12}},
		{10, []float64{0.3, 0.4, 0.3}, []int{3, 4, 3}},
		{1, []float64{0.3, 0.4, 0.3}, []int{0, 1, 0}},
		{5, []float64{1, 1, 1}, []int{2, 2, 1}},
		{7, []float64{0, 1, 0}, []int{0, 7, 0}},
		{0, []float64{1}, []int{0}},
	}
	for _, tt := range tests {
		got := allocate(tt.n, tt.weights)
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("allocate(%d, %v) = %v, want %v", tt.n, tt.weights, got, tt.want)
				break
			}
		}
	}
}

func TestPersonasSimilar(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"Honor patient confidentiality.", "Pursue justice for the innocent.", false},
		{"Honor patient confidentiality.", "Honor patient confidentiality above all.", true},
		{"Honor patient confidentiality.", "honor PATIENT confidentiality", true},
		{"Prioritize individual freedom.", "Prioritize collective safety.", false},
		{"Value honesty in every relationship.", "Value honesty in all relationships.", true},
		{"Protect the environment.", "", true},
	}
	for _, tt := range tests {
		if got := PersonasSimilar(tt.a, tt.b); got != tt.want {
			t.Errorf("PersonasSimilar(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix("professional=0.5, interpersonal=0.25,micro_ethics=0.25")
	if err != nil || m["professional"] != 0.5 || m["interpersonal"] != 0.25 || len(m) != 3 {
		t.Errorf("ParseMix = %v, %v", m, err)
	}
	for _, bad := range []string{"", "professional", "professional=x", "professional=-1"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) = nil error, want error", bad)
		}
	}
}
