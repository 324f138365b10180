package view

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTokenizerPieces: a byte-level vocabulary decodes through GPT-2's
// byte map ("Ġ" is a space), added tokens as they are, a character split
// over tokens goes whole to the token that completes it, and an unknown id
// shows as its number.
func TestTokenizerPieces(t *testing.T) {
	// "—" is the bytes e2 80 94, in GPT-2's byte map "â", "Ģ", "Ķ".
	dir := t.TempDir()
	body := `{"model": {"type": "BPE", "vocab": {"Ġhello": 0, "world": 1, "â": 2, "ĢĶ": 3}}, "added_tokens": [{"id": 5, "content": "<|im_end|>"}]}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadTokenizer(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ids  []int32
		want []string
	}{
		{[]int32{0, 1, 5}, []string{" hello", "world", "<|im_end|>"}},
		{[]int32{2, 3, 1}, []string{"", "—", "world"}},
		{[]int32{1, 2}, []string{"world", "\uFFFD"}},
		{[]int32{9}, []string{"⟨9⟩"}},
	}
	for _, tt := range tests {
		if got := tok.Pieces(tt.ids); !slices.Equal(got, tt.want) {
			t.Errorf("Pieces(%v) = %q, want %q", tt.ids, got, tt.want)
		}
	}
}
