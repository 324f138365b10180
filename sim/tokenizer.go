package sim

import (
	"strings"
	"sync"
)

// Special token ids. They are Qwen's ids, so logs and fixtures look like a
// real Qwen3 server's.
const (
	TokenEndOfText  int32 = 151643 // <|endoftext|>
	TokenIMStart    int32 = 151644 // <|im_start|>
	TokenIMEnd      int32 = 151645 // <|im_end|>
	TokenThinkStart int32 = 151667 // <think>
	TokenThinkEnd   int32 = 151668 // </think>

	// VocabSize is one more than the largest valid token id.
	VocabSize = 151669

	// tokenNewline is the byte token of "\n".
	tokenNewline int32 = '\n'
)

// specialTokens maps each special token's text to its id, in match order.
var specialTokens = []struct {
	text string
	id   int32
}{
	{"<|endoftext|>", TokenEndOfText},
	{"<|im_start|>", TokenIMStart},
	{"<|im_end|>", TokenIMEnd},
	{"<think>", TokenThinkStart},
	{"</think>", TokenThinkEnd},
}

// Tokenizer is the simulator's deterministic, reversible tokenizer. Text is
// split into special tokens, words (a run of ASCII letters, with the space
// before it when there is one) and single bytes; a word is looked up whole in
// the built-in vocabulary, then split greedily into the longest known pieces,
// then into bytes. Decode(Encode(s)) == s for every string, valid UTF-8 or
// not. No piece spans a newline or a special token, so text joined at a
// newline or a special token tokenizes as the concatenation of its parts:
// that is what makes chat re-rendering extend earlier sequences exactly.
//
// A Tokenizer is immutable and safe for concurrent use.
type Tokenizer struct {
	pieces  []string         // id -> text, for ids below len(pieces)
	words   map[string]int32 // piece text -> id, for vocabulary pieces
	maxWord int              // longest vocabulary piece, in bytes
	// trie holds the vocabulary pieces (letters, maybe after one space):
	// node n's child for symbol c is trie[n*trieFanout+c] (0: none; the
	// root is node 0 and is never a child), and term[n] is the id of the
	// piece ending at n, or -1.
	trie []int32
	term []int32
}

// trieFanout is the number of trie symbols: space, A-Z, a-z.
const trieFanout = 53

// trieSym maps a piece byte to its trie symbol, or -1.
func trieSym(c byte) int {
	switch {
	case c == ' ':
		return 0
	case c >= 'A' && c <= 'Z':
		return 1 + int(c-'A')
	case c >= 'a' && c <= 'z':
		return 27 + int(c-'a')
	}
	return -1
}

var (
	defaultTokenizer     *Tokenizer
	defaultTokenizerOnce sync.Once
)

// NewTokenizer returns the simulator's tokenizer. The vocabulary is fixed and
// built once; every call returns the same shared instance.
func NewTokenizer() *Tokenizer {
	defaultTokenizerOnce.Do(func() { defaultTokenizer = buildTokenizer() })
	return defaultTokenizer
}

func buildTokenizer() *Tokenizer {
	t := &Tokenizer{words: make(map[string]int32, 4096)}
	t.pieces = make([]string, 256, 4096)
	for b := 0; b < 256; b++ {
		t.pieces[b] = string([]byte{byte(b)})
	}
	add := func(p string) {
		if _, ok := t.words[p]; ok {
			return
		}
		t.words[p] = int32(len(t.pieces))
		t.pieces = append(t.pieces, p)
		if len(p) > t.maxWord {
			t.maxWord = len(p)
		}
	}
	for _, w := range strings.Fields(vocabWords) {
		add(w)
		add(" " + w)
		if c := w[0]; c >= 'a' && c <= 'z' {
			capital := string(c-'a'+'A') + w[1:]
			add(capital)
			add(" " + capital)
		}
	}
	t.trie = make([]int32, trieFanout, trieFanout*len(t.pieces)*2)
	t.term = []int32{-1}
	for id := 256; id < len(t.pieces); id++ {
		n := 0
		for _, c := range []byte(t.pieces[id]) {
			sym := trieSym(c)
			if sym < 0 {
				panic("sim: vocabulary piece with a byte outside [ A-Za-z]: " + t.pieces[id])
			}
			next := t.trie[n*trieFanout+sym]
			if next == 0 {
				next = int32(len(t.term))
				t.trie[n*trieFanout+sym] = next
				t.trie = append(t.trie, make([]int32, trieFanout)...)
				t.term = append(t.term, -1)
			}
			n = int(next)
		}
		t.term[n] = int32(id)
	}
	return t
}

func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// matchSpecial reports the special token at the start of s, if any.
func matchSpecial(s string) (int32, int) {
	for _, sp := range specialTokens {
		if strings.HasPrefix(s, sp.text) {
			return sp.id, len(sp.text)
		}
	}
	return 0, 0
}

// Encode tokenizes s. Special token texts anywhere in s become their single
// ids, as in a Hugging Face tokenizer with split_special_tokens off.
func (t *Tokenizer) Encode(s string) []int32 {
	return t.AppendEncode(make([]int32, 0, len(s)/4+4), s)
}

// AppendEncode appends the tokens of s to dst and returns the extended slice.
func (t *Tokenizer) AppendEncode(dst []int32, s string) []int32 {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '<' {
			if id, n := matchSpecial(s[i:]); n > 0 {
				dst = append(dst, id)
				i += n
				continue
			}
		}
		if isLetter(c) || (c == ' ' && i+1 < len(s) && isLetter(s[i+1])) {
			j := i + 1
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			dst = t.appendWord(dst, s[i:j])
			i = j
			continue
		}
		dst = append(dst, int32(c))
		i++
	}
	return dst
}

// appendWord tokenizes one word (letters, maybe with a leading space):
// greedily by the longest vocabulary piece, else by single bytes.
func (t *Tokenizer) appendWord(dst []int32, w string) []int32 {
	if id, ok := t.words[w]; ok {
		// The common case: a vocabulary word, whole.
		return append(dst, id)
	}
	for pos := 0; pos < len(w); {
		best, bestLen := int32(-1), 0
		n := 0
		for i := pos; i < len(w); i++ {
			sym := trieSym(w[i])
			if sym < 0 {
				break
			}
			next := t.trie[n*trieFanout+sym]
			if next == 0 {
				break
			}
			n = int(next)
			if id := t.term[n]; id >= 0 {
				best, bestLen = id, i+1-pos
			}
		}
		if best < 0 {
			dst = append(dst, int32(w[pos]))
			pos++
			continue
		}
		dst = append(dst, best)
		pos += bestLen
	}
	return dst
}

// Decode returns the text of ids. Ids that name no token (out of range, or in
// the unassigned gap below the special tokens) decode to nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	var b strings.Builder
	b.Grow(len(ids) * 4)
	for _, id := range ids {
		b.WriteString(t.Piece(id))
	}
	return b.String()
}

// DecodeSkipSpecial is Decode without the special tokens' text (vLLM's
// skip_special_tokens).
func (t *Tokenizer) DecodeSkipSpecial(ids []int32) string {
	var b strings.Builder
	b.Grow(len(ids) * 4)
	for _, id := range ids {
		if !IsSpecial(id) {
			b.WriteString(t.Piece(id))
		}
	}
	return b.String()
}

// Piece returns the text of one token id ("" if the id names no token).
func (t *Tokenizer) Piece(id int32) string {
	if id >= 0 && int(id) < len(t.pieces) {
		return t.pieces[id]
	}
	for _, sp := range specialTokens {
		if sp.id == id {
			return sp.text
		}
	}
	return ""
}

// IsSpecial reports whether id is one of the special tokens.
func IsSpecial(id int32) bool {
	return id >= TokenEndOfText && id < VocabSize && (id <= TokenIMEnd || id >= TokenThinkStart)
}

// ValidID reports whether id is inside the vocabulary range [0, VocabSize).
func ValidID(id int32) bool { return id >= 0 && id < VocabSize }
