// Package bpe reads a Hugging Face byte-level BPE tokenizer.json (Qwen's,
// GPT-2's, the tiny model's): its vocabulary's pieces turned back into
// their bytes with GPT-2's byte map, and its added tokens. The simulator
// encodes with it (sim.LoadTokenizer) and the viewer decodes with it
// (view.LoadTokenizer); neither reads the merges.
package bpe

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is what a tokenizer.json holds that parley reads.
type File struct {
	// Path is the tokenizer.json read.
	Path string
	// PreTokenizer is pre_tokenizer.type ("" when there is none).
	PreTokenizer string
	// Vocab is model.vocab's pieces, added tokens included, in no order.
	Vocab []Piece
	// Added is added_tokens, in the file's order.
	Added []Added
}

// Piece is one vocabulary entry: its id and its text, each rune of the
// piece turned back into its byte. ByteLevel is false when some rune is
// not in the byte map (it is then kept as it is).
type Piece struct {
	ID        int32
	Text      string
	ByteLevel bool
}

// Added is an added (special) token: its id and its text as written.
type Added struct {
	ID      int32
	Content string
}

// Read reads path, a tokenizer.json or a model folder holding one, whose
// model.type must be BPE. Errors name the file.
func Read(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bpe.Read: %w", err)
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
		return nil, fmt.Errorf("bpe.Read: %s: %w", path, err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("bpe.Read: %s: model.type %q, want a byte-level BPE", path, f.Model.Type)
	}
	out := &File{Path: path, Vocab: make([]Piece, 0, len(f.Model.Vocab))}
	if f.PreTokenizer != nil {
		out.PreTokenizer = f.PreTokenizer.Type
	}
	unbyte := byteDecoder()
	for piece, id := range f.Model.Vocab {
		var b strings.Builder
		p := Piece{ID: id, ByteLevel: true}
		for _, r := range piece {
			if c, ok := unbyte[r]; ok {
				b.WriteByte(c)
			} else {
				b.WriteRune(r)
				p.ByteLevel = false
			}
		}
		p.Text = b.String()
		out.Vocab = append(out.Vocab, p)
	}
	for _, a := range f.AddedTokens {
		out.Added = append(out.Added, Added{ID: a.ID, Content: a.Content})
	}
	return out, nil
}

// byteDecoder maps the characters of a byte-level BPE vocabulary back to
// bytes (GPT-2's bytes_to_unicode, inverted): printable Latin-1 bytes
// stand for themselves, the others for 256, 257, … in byte order.
func byteDecoder() map[rune]byte {
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
