package bpe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead: a vocabulary's pieces come back as bytes (Ġ is a space, Ċ a
// newline), a piece outside the byte map is kept and marked, added tokens
// are read in order, a folder means its tokenizer.json, and a file that
// is not a BPE tokenizer is an error naming it.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	body := `{"added_tokens":[{"id":3,"content":"<|im_start|>"},{"id":4,"content":"<|im_end|>"}],
"pre_tokenizer":{"type":"ByteLevel"},
"model":{"type":"BPE","vocab":{"Ġhi":0,"Ċ":1,"é":2,"<|im_start|>":3,"<|im_end|>":4,"ĠcafÃ©":5,"中":6}}}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]Piece{}
	for _, p := range f.Vocab {
		got[p.ID] = p
	}
	for id, want := range map[int32]Piece{0: {0, " hi", true}, 1: {1, "\n", true}, 5: {5, " café", true}, 2: {2, "\xe9", true}, 6: {6, "中", false}} {
		if got[id] != want {
			t.Errorf("piece %d = %+v, want %+v", id, got[id], want)
		}
	}
	if f.PreTokenizer != "ByteLevel" || len(f.Added) != 2 || f.Added[1] != (Added{4, "<|im_end|>"}) || f.Path != filepath.Join(dir, "tokenizer.json") {
		t.Errorf("file = %+v", f)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"model":{"type":"Unigram","vocab":{}}}`, `model.type "Unigram"`},
		{`{"model":`, "unexpected end of JSON"},
	} {
		p := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%s) = %v, want an error naming the file and %q", tt.body, err, tt.want)
		}
	}
}
