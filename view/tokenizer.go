package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/bpe"
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
	f, err := bpe.Read(path)
	if err != nil {
		return nil, fmt.Errorf("view.LoadTokenizer: %w", err)
	}
	t := &Tokenizer{Path: f.Path}
	set := func(id int32, s string) {
		if id < 0 || id > 10_000_000 {
			return
		}
		for int(id) >= len(t.pieces) {
			t.pieces = append(t.pieces, "")
			t.known = append(t.known, false)
		}
		t.pieces[id], t.known[id] = s, true
	}
	for _, p := range f.Vocab {
		set(p.ID, p.Text)
	}
	for _, a := range f.Added {
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

// Pieces is the text of each token of ids, whole characters only: the
// bytes of a character split over several tokens (a byte-level BPE splits
// "—" into three) go to the token that completes it, and the tokens
// before it get "". Bytes that never complete a character are shown as
// U+FFFD on the last of their tokens.
func (t *Tokenizer) Pieces(ids []int32) []string {
	out := make([]string, len(ids))
	var pending []byte
	for i, id := range ids {
		pending = append(pending, t.Piece(id)...)
		n := 0 // the bytes that form whole characters, or never will
		for n < len(pending) {
			r, size := utf8.DecodeRune(pending[n:])
			if r == utf8.RuneError && size == 1 && !utf8.FullRune(pending[n:]) && i < len(ids)-1 {
				break // a character cut short: the next token may complete it
			}
			n += size
		}
		out[i] = strings.ToValidUTF8(string(pending[:n]), "\uFFFD")
		pending = append(pending[:0:0], pending[n:]...)
	}
	return out
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
