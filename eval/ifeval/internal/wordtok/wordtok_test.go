package wordtok

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestGolden compares with NLTK 3.10.4's NLTKWordTokenizer().tokenize and
// nltk.word_tokenize on testdata/tokens.jsonl (the texts of
// ../punkt/testdata/sentences.jsonl).
func TestGolden(t *testing.T) {
	f, err := os.Open("testdata/tokens.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Text         string   `json:"text"`
			Treebank     []string `json:"treebank"`
			WordTokenize []string `json:"word_tokenize"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		if got := Tokenize(c.Text); !equal(got, c.Treebank) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.Text, got, c.Treebank)
		}
		if got := WordTokenize(c.Text); !equal(got, c.WordTokenize) {
			t.Errorf("WordTokenize(%q) = %q, want %q", c.Text, got, c.WordTokenize)
		}
	}
	if n < 300 {
		t.Fatalf("read %d cases, want at least 300", n)
	}
}

func equal(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func TestTokenize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"I CANNOT DO IT.", []string{"I", "CAN", "NOT", "DO", "IT", "."}},
		{"They'll say \"hi\" (maybe).", []string{"They", "'ll", "say", "``", "hi", "''", "(", "maybe", ")", "."}},
		{"Don't gonna 'tis", []string{"Do", "n't", "gon", "na", "'", "tis"}},
		{"a--b ... c", []string{"a", "--", "b", "...", "c"}},
	} {
		if got := Tokenize(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
