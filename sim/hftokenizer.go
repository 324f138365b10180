package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim.LoadTokenizer: %w", err)
	}
	var f struct {
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		PreTokenizer *struct {
			Type string `json:"type"`
		} `json:"pre_tokenizer"`
		Model struct {
			Type  string           `json:"type"`
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("sim.LoadTokenizer: %s: %w", path, err)
	}
	if f.Model.Type != "BPE" || f.PreTokenizer == nil || f.PreTokenizer.Type != "ByteLevel" {
		return nil, fmt.Errorf("sim.LoadTokenizer: %s: model.type %q with pre_tokenizer %v, want a byte-level BPE (model.type BPE, pre_tokenizer ByteLevel)",
			path, f.Model.Type, f.PreTokenizer)
	}
	t := &Tokenizer{words: make(map[string]int32, len(f.Model.Vocab)), endOfText: -1, imStart: -1, imEnd: -1, thinkStart: -1, thinkEnd: -1}
	for b := range t.byteID {
		t.byteID[b] = -1
	}
	added := map[string]bool{}
	for _, a := range f.AddedTokens {
		added[a.Content] = true
	}
	unbyte := byteLevelDecoder()
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
	for piece, id := range f.Model.Vocab {
		if added[piece] {
			continue
		}
		raw := make([]byte, 0, len(piece))
		for _, r := range piece {
			b, ok := unbyte[r]
			if !ok {
				return nil, fmt.Errorf("sim.LoadTokenizer: %s: vocabulary piece %q is not byte-level (rune %q)", path, piece, r)
			}
			raw = append(raw, b)
		}
		text := string(raw)
		if err := setPiece(id, text); err != nil {
			return nil, err
		}
		if len(raw) == 1 {
			t.byteID[raw[0]] = id
		} else if isWordPiece(text) {
			t.words[text] = id
		}
	}
	for b, id := range t.byteID {
		if id < 0 {
			return nil, fmt.Errorf("sim.LoadTokenizer: %s: byte 0x%02x has no token of its own", path, b)
		}
	}
	for _, a := range f.AddedTokens {
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

// byteLevelDecoder maps the characters of a byte-level BPE vocabulary back
// to bytes (GPT-2's bytes_to_unicode, inverted): printable Latin-1 bytes
// stand for themselves, the others for 256, 257, ... in byte order.
func byteLevelDecoder() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
			continue
		}
		m[rune(256+n)] = byte(b)
		n++
	}
	return m
}
