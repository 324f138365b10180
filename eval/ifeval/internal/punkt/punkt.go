// Package punkt is a Go port of NLTK's Punkt sentence tokenizer as used by
// nltk.sent_tokenize (nltk/tokenize/punkt.py, NLTK 3.10), with NLTK's
// pretrained English parameters (punkt_tab/english) embedded.
//
// Only the tokenizing side is ported (no training). All positions are counted
// in code points, as Python indexes str. The reference's regular expressions
// (several use look-ahead, which Go's RE2 lacks) are hand-written scanners
// here, with the character classes of the regex module NLTK 3.10 compiles
// them with; str methods (strip, rstrip) keep Python's str semantics.
package punkt

import (
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/pystr"
)

// Orthographic context flags, as in NLTK.
const (
	orthoBegUC = 1 << 1
	orthoMidUC = 1 << 2
	orthoUnkUC = 1 << 3
	orthoBegLC = 1 << 4
	orthoMidLC = 1 << 5
	orthoUnkLC = 1 << 6
	orthoUC    = orthoBegUC + orthoMidUC + orthoUnkUC
	orthoLC    = orthoBegLC + orthoMidLC + orthoUnkLC
)

// Params are the learned parameters of a Punkt model.
type Params struct {
	// AbbrevTypes are known abbreviation types (lower case, no final period).
	AbbrevTypes map[string]bool
	// Collocations are word-type pairs whose first member ends in a period
	// that is not a sentence break.
	Collocations map[[2]string]bool
	// SentStarters are word types that frequently start sentences.
	SentStarters map[string]bool
	// OrthoContext maps a word type to its orthographic context flags.
	OrthoContext map[string]int
}

// Tokenizer splits text into sentences with a Punkt model.
type Tokenizer struct {
	p *Params
}

// New returns a tokenizer using p.
func New(p *Params) *Tokenizer { return &Tokenizer{p: p} }

//go:embed english.tsv
var englishTSV string

var (
	englishOnce sync.Once
	englishTok  *Tokenizer
)

// English returns the tokenizer with NLTK's pretrained English parameters,
// the model nltk.sent_tokenize uses by default.
func English() *Tokenizer {
	englishOnce.Do(func() {
		p, err := ParseParams(englishTSV)
		if err != nil {
			panic(fmt.Sprintf("punkt.English: embedded model: %v", err))
		}
		englishTok = New(p)
	})
	return englishTok
}

// ParseParams reads parameters in the tab-separated form of english.tsv.
func ParseParams(tsv string) (*Params, error) {
	p := &Params{
		AbbrevTypes:  map[string]bool{},
		Collocations: map[[2]string]bool{},
		SentStarters: map[string]bool{},
		OrthoContext: map[string]int{},
	}
	for n, line := range strings.Split(tsv, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		bad := fmt.Errorf("punkt.ParseParams: line %d: malformed %q", n+1, line)
		switch f[0] {
		case "abbrev":
			if len(f) != 2 {
				return nil, bad
			}
			p.AbbrevTypes[f[1]] = true
		case "starter":
			if len(f) != 2 {
				return nil, bad
			}
			p.SentStarters[f[1]] = true
		case "colloc":
			if len(f) != 3 {
				return nil, bad
			}
			p.Collocations[[2]string{f[1], f[2]}] = true
		case "ortho":
			if len(f) != 3 {
				return nil, bad
			}
			v, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, fmt.Errorf("punkt.ParseParams: line %d: %w", n+1, err)
			}
			p.OrthoContext[f[1]] = v
		default:
			return nil, bad
		}
	}
	return p, nil
}

// Tokenize splits text into sentences like PunktSentenceTokenizer.tokenize
// (with boundary realignment).
func (t *Tokenizer) Tokenize(text string) []string {
	rs := []rune(text)
	spans := t.spans(rs)
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = string(rs[s[0]:s[1]])
	}
	return out
}

// Count returns len(Tokenize(text)).
func (t *Tokenizer) Count(text string) int { return len(t.spans([]rune(text))) }

// spans returns the realigned sentence slices of rs, in code points.
func (t *Tokenizer) spans(rs []rune) [][2]int {
	slices := t.slicesFromText(rs)
	return realignBoundaries(rs, slices)
}

// endMatch is one match of NLTK's period_context_re: a sentence-ending
// character at pos, with the token after it.
type endMatch struct {
	pos      int // index of the '.', '?' or '!'
	afterEnd int // end of the after_tok group
	nextTok  int // start of the next_tok group, or -1 when it did not match
}

func isSentEnd(r rune) bool { return r == '.' || r == '?' || r == '!' }

// isNonWord is NLTK's _re_non_word_chars: characters that cannot appear
// within words.
func isNonWord(r rune) bool {
	switch r {
	case ')', '"', ';', '}', ']', '*', ':', '@', '\'', '(', '{', '[',
		'\u2018', '\u2019', '\u201c', '\u201d', '\u00ab', '\u00bb', '?', '!':
		return true
	}
	return false
}

// periodContexts finds the matches of period_context_re:
//
//	[.?!](?=(?P<after_tok>NonWord|\s+(?P<next_tok>\S+)))
func periodContexts(rs []rune) []endMatch {
	var out []endMatch
	n := len(rs)
	for i, r := range rs {
		if !isSentEnd(r) || i+1 >= n {
			continue
		}
		if isNonWord(rs[i+1]) {
			out = append(out, endMatch{pos: i, afterEnd: i + 2, nextTok: -1})
			continue
		}
		if !pystr.IsRegexSpace(rs[i+1]) {
			continue
		}
		j := i + 1
		for j < n && pystr.IsRegexSpace(rs[j]) {
			j++
		}
		if j == n {
			continue
		}
		k := j
		for k < n && !pystr.IsRegexSpace(rs[k]) {
			k++
		}
		out = append(out, endMatch{pos: i, afterEnd: k, nextTok: j})
	}
	return out
}

// lastWhitespaceIndex is _get_last_whitespace_index: the index of the last
// string.whitespace character, or 0 when there is none.
func lastWhitespaceIndex(rs []rune) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if pystr.IsASCIISpace(rs[i]) {
			return i
		}
	}
	return 0
}

// pySlice is text[a:b] with Python's clamping of out-of-order bounds.
func pySlice(rs []rune, a, b int) []rune {
	if a < 0 {
		a = 0
	}
	if b > len(rs) {
		b = len(rs)
	}
	if a >= b {
		return nil
	}
	return rs[a:b]
}

type matchContext struct {
	m   endMatch
	ctx []rune
}

// potentialEndContexts is _match_potential_end_contexts: each match with the
// word before it, dropping matches whose previous word overlaps.
func potentialEndContexts(rs []rune) []matchContext {
	var out []matchContext
	prevStart, prevStop := 0, 0
	var prev *endMatch
	context := func(m endMatch, start, stop int) []rune {
		var c []rune
		c = append(c, pySlice(rs, start, stop)...)
		c = append(c, rs[m.pos])
		c = append(c, rs[m.pos+1:m.afterEnd]...)
		return c
	}
	matches := periodContexts(rs)
	for i := range matches {
		m := matches[i]
		before := pySlice(rs, prevStop, m.pos)
		idx := lastWhitespaceIndex(before)
		if idx != 0 {
			idx += prevStop + 1
		} else {
			idx = prevStart
		}
		if prev != nil && prevStop <= idx {
			out = append(out, matchContext{*prev, context(*prev, prevStart, prevStop)})
		}
		prev = &matches[i]
		prevStart, prevStop = idx, m.pos
	}
	if prev != nil {
		out = append(out, matchContext{*prev, context(*prev, prevStart, prevStop)})
	}
	return out
}

// slicesFromText is _slices_from_text.
func (t *Tokenizer) slicesFromText(rs []rune) [][2]int {
	var out [][2]int
	lastBreak := 0
	for _, mc := range potentialEndContexts(rs) {
		if t.containsSentbreak(mc.ctx) {
			out = append(out, [2]int{lastBreak, mc.m.pos + 1})
			if mc.m.nextTok >= 0 {
				lastBreak = mc.m.nextTok
			} else {
				lastBreak = mc.m.pos + 1
			}
		}
	}
	end := len(rs)
	for end > 0 && pystr.IsSpace(rs[end-1]) {
		end--
	}
	return append(out, [2]int{lastBreak, end})
}

// isRealignChar is the character class of re_boundary_realignment.
func isRealignChar(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '\u2018', '\u2019', '\u201c', '\u201d', '\u00ab', '\u00bb':
		return true
	}
	return false
}

// realignMatch matches re_boundary_realignment at the start of s:
//
//	["')\]}‘’“”«»]+?(?:\s+|(?=--)|$)
//
// It returns the length of the closing punctuation and the match end.
func realignMatch(s []rune) (k, end int, ok bool) {
	for k = 1; k <= len(s) && isRealignChar(s[k-1]); k++ {
		if k < len(s) && pystr.IsRegexSpace(s[k]) {
			end = k
			for end < len(s) && pystr.IsRegexSpace(s[end]) {
				end++
			}
			return k, end, true
		}
		if k+1 < len(s) && s[k] == '-' && s[k+1] == '-' {
			return k, k, true
		}
		if k == len(s) {
			return k, k, true
		}
	}
	return 0, 0, false
}

// realignBoundaries is _realign_boundaries: closing punctuation after a
// sentence end moves onto the sentence it closes.
func realignBoundaries(rs []rune, slices [][2]int) [][2]int {
	var out [][2]int
	realign := 0
	for i, s1 := range slices {
		s1[0] += realign
		if i == len(slices)-1 {
			if len(pySlice(rs, s1[0], s1[1])) > 0 {
				out = append(out, s1)
			}
			continue
		}
		s2 := slices[i+1]
		if k, end, ok := realignMatch(pySlice(rs, s2[0], s2[1])); ok {
			out = append(out, [2]int{s1[0], s2[0] + k})
			realign = end
		} else {
			realign = 0
			if len(pySlice(rs, s1[0], s1[1])) > 0 {
				out = append(out, s1)
			}
		}
	}
	return out
}

// token is a PunktToken with its annotations.
type token struct {
	tok         string
	typ         string
	periodFinal bool
	sentbreak   bool
	abbr        bool
	ellipsis    bool
}

// reNumeric is PunktToken._RE_NUMERIC.
var reNumeric = regexp.MustCompile(`^-?[.,]?\p{Nd}[\p{Nd},.\-]*\.?$`)

func newToken(tok string) *token {
	typ := pystr.Lower(tok)
	if reNumeric.MatchString(typ) {
		typ = "##number##"
	}
	return &token{tok: tok, typ: typ, periodFinal: strings.HasSuffix(tok, ".")}
}

func (t *token) typeNoPeriod() string {
	if utf8.RuneCountInString(t.typ) > 1 && strings.HasSuffix(t.typ, ".") {
		return t.typ[:len(t.typ)-1]
	}
	return t.typ
}

func (t *token) typeNoSentperiod() string {
	if t.sentbreak {
		return t.typeNoPeriod()
	}
	return t.typ
}

func (t *token) firstRune() rune {
	r, _ := utf8.DecodeRuneInString(t.tok)
	return r
}

func (t *token) firstUpper() bool { return pystr.IsUpper(string(t.firstRune())) }

func (t *token) firstLower() bool { return pystr.IsLower(string(t.firstRune())) }

// isEllipsis is _RE_ELLIPSIS (\.\.+$) matched at the start.
func (t *token) isEllipsis() bool {
	return len(t.tok) >= 2 && strings.Trim(t.tok, ".") == ""
}

// isInitial is _RE_INITIAL ([^\W\d]\.$) matched at the start.
func (t *token) isInitial() bool {
	r, size := utf8.DecodeRuneInString(t.tok)
	return size > 0 && t.tok[size:] == "." && pystr.IsRegexWord(r) && !pystr.IsDigit(r)
}

// tokenizeWords is _tokenize_words: the Punkt word tokenizer, line by line.
func tokenizeWords(rs []rune) []*token {
	var out []*token
	start := 0
	for i := 0; i <= len(rs); i++ {
		if i < len(rs) && rs[i] != '\n' {
			continue
		}
		line := rs[start:i]
		start = i + 1
		if pystr.Strip(string(line)) == "" {
			continue
		}
		for _, w := range wordTokenize(line) {
			out = append(out, newToken(w))
		}
	}
	return out
}

// isWordStartExcluded lists the characters _re_word_start excludes.
func isWordStartExcluded(r rune) bool {
	switch r {
	case '(', '"', '`', '{', '[', ':', ';', '&', '#', '*', '@', ')', '}', ']', '-', ',':
		return true
	}
	return false
}

// multiCharAt returns the length of _re_multi_char_punct matched at i
// ((?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)), or 0.
func multiCharAt(rs []rune, i int) int {
	n := len(rs)
	if i >= n {
		return 0
	}
	run := func(c rune) int {
		j := i
		for j < n && rs[j] == c {
			j++
		}
		return j - i
	}
	if l := run('-'); l >= 2 {
		return l
	}
	if l := run('.'); l >= 2 {
		return l
	}
	reps := 0
	for j := i; j+1 < n && rs[j] == '.' && pystr.IsRegexSpace(rs[j+1]); j += 2 {
		reps++
	}
	if reps >= 2 && i+2*reps < n && rs[i+2*reps] == '.' {
		return 2*reps + 1
	}
	if reps >= 3 {
		return 2*reps - 1
	}
	return 0
}

// wordEndAt is the look-ahead that ends a word in _word_tokenize_fmt:
// \s | $ | NonWord | MultiChar | ,(?=$|\s|NonWord|MultiChar)
func wordEndAt(rs []rune, j int) bool {
	n := len(rs)
	if j >= n || pystr.IsRegexSpace(rs[j]) || isNonWord(rs[j]) || multiCharAt(rs, j) > 0 {
		return true
	}
	if rs[j] == ',' {
		k := j + 1
		return k >= n || pystr.IsRegexSpace(rs[k]) || isNonWord(rs[k]) || multiCharAt(rs, k) > 0
	}
	return false
}

// wordTokenize is PunktLanguageVars.word_tokenize: findall of
//
//	MultiChar | (?=WordStart)\S+?(?=WordEnd) | \S
func wordTokenize(rs []rune) []string {
	var out []string
	n := len(rs)
	for i := 0; i < n; {
		if pystr.IsRegexSpace(rs[i]) {
			i++
			continue
		}
		if l := multiCharAt(rs, i); l > 0 {
			out = append(out, string(rs[i:i+l]))
			i += l
			continue
		}
		if !isWordStartExcluded(rs[i]) {
			j := i + 1
			for !wordEndAt(rs, j) {
				j++
			}
			out = append(out, string(rs[i:j]))
			i = j
			continue
		}
		out = append(out, string(rs[i]))
		i++
	}
	return out
}

// orthoHeuristic results.
const (
	orthoUnknown = iota
	orthoYes
	orthoNo
)

var punctuationToks = map[string]bool{";": true, ":": true, ",": true, ".": true, "!": true, "?": true}

// orthoHeuristic is _ortho_heuristic: whether tok starts a sentence.
func (t *Tokenizer) orthoHeuristic(tok *token) int {
	if punctuationToks[tok.tok] {
		return orthoNo
	}
	ctx := t.p.OrthoContext[tok.typeNoSentperiod()]
	if tok.firstUpper() && ctx&orthoLC != 0 && ctx&orthoMidUC == 0 {
		return orthoYes
	}
	if tok.firstLower() && (ctx&orthoUC != 0 || ctx&orthoBegLC == 0) {
		return orthoNo
	}
	return orthoUnknown
}

// firstPass is _first_pass_annotation.
func (t *Tokenizer) firstPass(tok *token) {
	s := tok.tok
	switch {
	case s == "." || s == "?" || s == "!":
		tok.sentbreak = true
	case tok.isEllipsis():
		tok.ellipsis = true
	case tok.periodFinal && !strings.HasSuffix(s, ".."):
		w := pystr.Lower(s[:len(s)-1])
		parts := strings.Split(w, "-")
		if t.p.AbbrevTypes[w] || t.p.AbbrevTypes[parts[len(parts)-1]] {
			tok.abbr = true
		} else {
			tok.sentbreak = true
		}
	}
}

// secondPass is _second_pass_annotation for the pair (t1, t2).
func (t *Tokenizer) secondPass(t1, t2 *token) {
	if !t1.periodFinal {
		return
	}
	typ := t1.typeNoPeriod()
	nextTyp := t2.typeNoSentperiod()
	initial := t1.isInitial()
	if t.p.Collocations[[2]string{typ, nextTyp}] {
		t1.sentbreak = false
		t1.abbr = true
		return
	}
	if (t1.abbr || t1.ellipsis) && !initial {
		if t.orthoHeuristic(t2) == orthoYes {
			t1.sentbreak = true
			return
		}
		if t2.firstUpper() && t.p.SentStarters[nextTyp] {
			t1.sentbreak = true
			return
		}
	}
	if initial || typ == "##number##" {
		h := t.orthoHeuristic(t2)
		if h == orthoNo {
			t1.sentbreak = false
			t1.abbr = true
			return
		}
		if h == orthoUnknown && initial && t2.firstUpper() && t.p.OrthoContext[nextTyp]&orthoLC == 0 {
			t1.sentbreak = false
			t1.abbr = true
		}
	}
}

// containsSentbreak is text_contains_sentbreak: whether a token other than
// the last is annotated as a sentence break.
func (t *Tokenizer) containsSentbreak(rs []rune) bool {
	toks := tokenizeWords(rs)
	for _, tok := range toks {
		t.firstPass(tok)
	}
	for i := 0; i+1 < len(toks); i++ {
		t.secondPass(toks[i], toks[i+1])
		if toks[i].sentbreak {
			return true
		}
	}
	return false
}
