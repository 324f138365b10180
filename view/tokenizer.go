package view

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer decodes token ids to text: a byte-level BPE tokenizer.json's
// vocabulary and added tokens as an id → string map, each vocabulary piece
// turned back into its bytes with GPT-2's byte decoder. The viewer never
// encodes, so the merges are not read.
type Tokenizer struct {
	// Path is the tokenizer.json read.
	Path   string
	pieces []string
	known  []bool
}

// LoadTokenizer reads path, a tokenizer.json or a model folder holding
// one, of a byte-level BPE tokenizer.
func LoadTokenizer(path string) (*Tokenizer, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("view.LoadTokenizer: %w", err)
	}
	var f struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Type  string         `json:"type"`
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("view.LoadTokenizer: %s: %w", path, err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("view.LoadTokenizer: %s: model.type %q, want a byte-level BPE", path, f.Model.Type)
	}
	t := &Tokenizer{Path: path}
	set := func(id int, s string) {
		if id < 0 || id > 10_000_000 {
			return
		}
		for id >= len(t.pieces) {
			t.pieces = append(t.pieces, "")
			t.known = append(t.known, false)
		}
		t.pieces[id], t.known[id] = s, true
	}
	unbyte := byteDecoder()
	for piece, id := range f.Model.Vocab {
		var b strings.Builder
		for _, r := range piece {
			if c, ok := unbyte[r]; ok {
				b.WriteByte(c)
			} else {
				b.WriteRune(r)
			}
		}
		set(id, b.String())
	}
	for _, a := range f.AddedTokens {
		set(a.ID, a.Content)
	}
	return t, nil
}

// Piece is the text of one token id ("⟨id⟩" for an id the vocabulary
// lacks). A piece may hold part of a multi-byte character.
func (t *Tokenizer) Piece(id int32) string {
	if id >= 0 && int(id) < len(t.pieces) && t.known[id] {
		return t.pieces[id]
	}
	return fmt.Sprintf("⟨%d⟩", id)
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

// runConfig is the part of a run's frozen config.yaml the viewer reads:
// names and models, never keys (it is parsed leniently, so that a config
// of another parley version still shows).
type runConfig struct {
	Run struct {
		Name string `yaml:"name"`
	} `yaml:"run"`
	Policy struct {
		Model string `yaml:"model"`
	} `yaml:"policy"`
	Trainer struct {
		Model string `yaml:"model"`
	} `yaml:"trainer"`
	Game struct {
		Env string `yaml:"env"`
	} `yaml:"game"`
	Judge struct {
		Kind  string `yaml:"kind"`
		Model string `yaml:"model"`
	} `yaml:"judge"`
}

// tokenizerCandidates are where a run's tokenizer.json may be: beside the
// model its config names (trainer.model, then policy.model), as a path
// relative to the working directory or to the run directory's parent
// folders (runs/<name> under the repository).
func tokenizerCandidates(runDir string, c runConfig) []string {
	var out []string
	for _, m := range []string{c.Trainer.Model, c.Policy.Model} {
		if m == "" {
			continue
		}
		if filepath.IsAbs(m) {
			out = append(out, filepath.Join(m, "tokenizer.json"))
			continue
		}
		out = append(out, filepath.Join(m, "tokenizer.json"))
		dir, _ := filepath.Abs(runDir)
		for i := 0; i < 3 && dir != filepath.Dir(dir); i++ {
			dir = filepath.Dir(dir)
			out = append(out, filepath.Join(dir, m, "tokenizer.json"))
		}
	}
	return out
}

// tokenizer is the run's tokenizer, nil when none is found.
func (s *Server) tokenizer(src *source, c runConfig) *Tokenizer {
	for _, p := range tokenizerCandidates(src.Dir, c) {
		s.mu.Lock()
		t, ok := s.toks[p]
		s.mu.Unlock()
		if ok {
			if t != nil {
				return t
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue // not cached: a tokenizer may appear later
		}
		t, err := LoadTokenizer(p)
		if err != nil {
			s.log.Warn("view: tokenizer not read: token ids are shown instead")
			t = nil
		}
		s.mu.Lock()
		s.toks[p] = t
		s.mu.Unlock()
		if t != nil {
			return t
		}
	}
	return nil
}
