package punkt

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestTokenizeGolden compares with nltk.sent_tokenize (NLTK 3.10.4, English
// punkt_tab) on testdata/sentences.jsonl: hand-written texts full of
// abbreviations, initials, numbers, quotes and ellipses, and 300 synthetic
// texts mixing those with Unicode whitespace, letters and punctuation.
func TestTokenizeGolden(t *testing.T) {
	f, err := os.Open("testdata/sentences.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Text      string   `json:"text"`
			Sentences []string `json:"sentences"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		got := English().Tokenize(c.Text)
		if len(got) == 0 && len(c.Sentences) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.Sentences) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.Text, got, c.Sentences)
		}
		if cnt := English().Count(c.Text); cnt != len(c.Sentences) {
			t.Errorf("Count(%q) = %d, want %d", c.Text, cnt, len(c.Sentences))
		}
	}
	if n < 300 {
		t.Fatalf("read %d cases, want at least 300", n)
	}
}

// TestReferenceCounts are instructions_util_test's count_sentences cases.
func TestReferenceCounts(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"xx,x. xx,x! xx/x. x{x}x? x.", 5},
		{"xx,x! xxxx. x(x)x?", 3},
		{"xxxx. xx,x! xx|x. x&x x?", 4},
		{"xx-x]xx,x! x{x}xx,x.", 2},
		{"", 0},
		{"   ", 0},
	} {
		if got := English().Count(c.text); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

func TestParseParamsErrors(t *testing.T) {
	for _, tsv := range []string{"bogus\tx", "abbrev", "ortho\tx\ty", "colloc\ta"} {
		if _, err := ParseParams(tsv); err == nil {
			t.Errorf("ParseParams(%q) = nil error, want an error", tsv)
		}
	}
	p, err := ParseParams("# c\nabbrev\tdr\nstarter\tthe\ncolloc\ta\tb\northo\tx\t6\n")
	if err != nil {
		t.Fatal(err)
	}
	if !p.AbbrevTypes["dr"] || !p.SentStarters["the"] || !p.Collocations[[2]string{"a", "b"}] || p.OrthoContext["x"] != 6 {
		t.Errorf("ParseParams = %+v, want dr, the, (a b), x=6", p)
	}
}

func TestEnglishModel(t *testing.T) {
	p := English().p
	if len(p.AbbrevTypes) != 156 || len(p.SentStarters) != 39 || len(p.Collocations) != 37 || len(p.OrthoContext) != 20366 {
		t.Errorf("English model sizes = %d, %d, %d, %d, want 156, 39, 37, 20366",
			len(p.AbbrevTypes), len(p.SentStarters), len(p.Collocations), len(p.OrthoContext))
	}
}

func BenchmarkCount(b *testing.B) {
	text := "Dr. Smith went to Washington. He met Mr. J. Bach at 3 p.m. Then he left... And came back! Really? " +
		"The U.S. economy grew 2.5% in Q3. Analysts, e.g. those at Goldman Sachs Inc., expected less."
	for i := 0; i < b.N; i++ {
		English().Count(text)
	}
}
