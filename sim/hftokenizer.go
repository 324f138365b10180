package sim

import (
	"fmt"

	"github.com/parleyhq/parley/internal/bpe"
)

// LoadTokenizer makes the simulator's tokenizer speak a served model's
// vocabulary: path is a Hugging Face tokenizer.json, or a model folder
// holding one, of a byte-level BPE tokenizer (Qwen's, GPT-2's, the tiny
// model's). Text is still split the simulator's way (special tokens, letter
// words, single bytes), each word into the vocabulary's longest pieces, so
// every id is the model's and decodes, with the model's own tokenizer, to
// the same text; the split need not be the one the model's merges would
// choose. The special tokens are the file's added tokens; <|im_start|> and
// <|im_end|> are required.
func LoadTokenizer(path string) (*Tokenizer, error) {
	f, err := bpe.Read(path)
	if err != nil {
		return nil, fmt.Errorf("sim.LoadTokenizer: %w", err)
	}
	path = f.Path
	if f.PreTokenizer != "ByteLevel" {
		return nil, fmt.Errorf("sim.LoadTokenizer: %s: pre_tokenizer %q, want a byte-level BPE (model.type BPE, pre_tokenizer ByteLevel)",
			path, f.PreTokenizer)
	}
	t := &Tokenizer{words: make(map[string]int32, len(f.Vocab)), endOfText: -1, imStart: -1, imEnd: -1, thinkStart: -1, thinkEnd: -1}
	for b := range t.byteID {
		t.byteID[b] = -1
	}
	added := map[string]bool{}
	for _, a := range f.Added {
		added[a.Content] = true
	}
	setPiece := func(id int32, text string) error {
		if id < 0 {
			return fmt.Errorf("sim.LoadTokenizer: %s: token %q has id %d", path, text, id)
		}
		for int(id) >= len(t.pieces) {
			t.pieces = append(t.pieces, "")
		}
		t.pieces[id] = text
		t.vocabSize = max(t.vocabSize, id+1)
		return nil
	}
	for _, p := range f.Vocab {
		if added[p.Text] {
			continue
		}
		if !p.ByteLevel {
			return nil, fmt.Errorf("sim.LoadTokenizer: %s: vocabulary piece %q is not byte-level", path, p.Text)
		}
		if err := setPiece(p.ID, p.Text); err != nil {
			return nil, err
		}
		if len(p.Text) == 1 {
			t.byteID[p.Text[0]] = p.ID
		} else if isWordPiece(p.Text) {
			t.words[p.Text] = p.ID
		}
	}
	for b, id := range t.byteID {
		if id < 0 {
			return nil, fmt.Errorf("sim.LoadTokenizer: %s: byte 0x%02x has no token of its own", path, b)
		}
	}
	for _, a := range f.Added {
		if err := setPiece(a.ID, a.Content); err != nil {
			return nil, err
		}
		t.specials = append(t.specials, special{a.Content, a.ID})
		switch a.Content {
		case "<|endoftext|>":
			t.endOfText = a.ID
		case "<|im_start|>":
			t.imStart = a.ID
		case "<|im_end|>":
			t.imEnd = a.ID
		case "<think>":
			t.thinkStart = a.ID
		case "</think>":
			t.thinkEnd = a.ID
		}
	}
	if t.imStart < 0 || t.imEnd < 0 {
		return nil, fmt.Errorf("sim.LoadTokenizer: %s: added_tokens lack <|im_start|> or <|im_end|> (the chat template's)", path)
	}
	t.newline = t.byteID['\n']
	t.buildTrie()
	return t, nil
}

// isWordPiece reports whether a piece is a word the tokenizer looks up:
// ASCII letters, maybe after one space.
func isWordPiece(p string) bool {
	if len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		if !isLetter(p[i]) {
			return false
		}
	}
	return true
}
