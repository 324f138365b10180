package sim

import (
	"slices"
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

// Tokenizer is the simulator's deterministic, reversible tokenizer. Text is
// split into special tokens, words (a run of ASCII letters, with the space
// before it when there is one) and single bytes; a word is looked up whole in
// the vocabulary, then split greedily into the longest known pieces, then
// into bytes. Decode(Encode(s)) == s for every string, valid UTF-8 or not.
// No piece spans a newline or a special token, so text joined at a newline
// or a special token tokenizes as the concatenation of its parts: that is
// what makes chat re-rendering extend earlier sequences exactly.
//
// NewTokenizer's vocabulary is built in (Qwen's special token ids);
// LoadTokenizer takes a served model's byte-level BPE vocabulary, so the
// ids are that model's. A Tokenizer is immutable and safe for concurrent
// use.
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

	byteID   [256]int32 // the token of each single byte
	specials []special  // special tokens, in match order
	// The ids of the special tokens the chat template and the agents use
	// (-1 when the vocabulary lacks <think> or </think>), and of "\n".
	endOfText, imStart, imEnd, thinkStart, thinkEnd, newline int32
	vocabSize                                                int32 // one more than the largest id

	bareGenPromptOnce sync.Once
	bareGenPromptIDs  []int32
}

// special is one special token: its text and id.
type special struct {
	text string
	id   int32
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
	t := &Tokenizer{words: make(map[string]int32, 4096), endOfText: TokenEndOfText, imStart: TokenIMStart,
		imEnd: TokenIMEnd, thinkStart: TokenThinkStart, thinkEnd: TokenThinkEnd, newline: tokenNewline, vocabSize: VocabSize}
	t.pieces = make([]string, 256, 4096)
	for b := 0; b < 256; b++ {
		t.pieces[b] = string([]byte{byte(b)})
		t.byteID[b] = int32(b)
	}
	add := func(p string) {
		if _, ok := t.words[p]; ok {
			return
		}
		t.words[p] = int32(len(t.pieces))
		t.pieces = append(t.pieces, p)
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
	t.specials = []special{
		{"<|endoftext|>", TokenEndOfText},
		{"<|im_start|>", TokenIMStart},
		{"<|im_end|>", TokenIMEnd},
		{"<think>", TokenThinkStart},
		{"</think>", TokenThinkEnd},
	}
	t.buildTrie()
	return t
}

// buildTrie fills maxWord, trie and term from words.
func (t *Tokenizer) buildTrie() {
	ids := make([]int32, 0, len(t.words))
	for p, id := range t.words {
		ids = append(ids, id)
		t.maxWord = max(t.maxWord, len(p))
	}
	slices.Sort(ids)
	t.trie = make([]int32, trieFanout, trieFanout*len(ids)*2)
	t.term = []int32{-1}
	for _, id := range ids {
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
		t.term[n] = id
	}
}

func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// matchSpecial reports the special token at the start of s, if any.
func (t *Tokenizer) matchSpecial(s string) (int32, int) {
	for _, sp := range t.specials {
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
			if id, n := t.matchSpecial(s[i:]); n > 0 {
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
		dst = append(dst, t.byteID[c])
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
			dst = append(dst, t.byteID[w[pos]])
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
		if !t.IsSpecial(id) {
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
	for _, sp := range t.specials {
		if sp.id == id {
			return sp.text
		}
	}
	return ""
}

// IsSpecial reports whether id is one of the tokenizer's special tokens.
func (t *Tokenizer) IsSpecial(id int32) bool {
	for _, sp := range t.specials {
		if sp.id == id {
			return true
		}
	}
	return false
}

// ValidID reports whether id is inside the vocabulary range [0, VocabSize()).
func (t *Tokenizer) ValidID(id int32) bool { return id >= 0 && id < t.vocabSize }

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int32 { return t.vocabSize }

// IsSpecial reports whether id is one of the built-in tokenizer's special
// tokens (NewTokenizer).
func IsSpecial(id int32) bool { return NewTokenizer().IsSpecial(id) }

// ValidID reports whether id is inside the built-in tokenizer's vocabulary
// range [0, VocabSize).
func ValidID(id int32) bool { return id >= 0 && id < VocabSize }
