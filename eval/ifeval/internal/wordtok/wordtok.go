// Package wordtok is a Go port of nltk.word_tokenize (NLTK 3.10): Punkt
// sentence splitting followed by NLTKWordTokenizer, the improved Penn
// Treebank tokenizer of nltk/tokenize/destructive.py.
//
// The tokenizer is a fixed sequence of regular-expression substitutions, which
// NLTK 3.10 compiles with the regex module (the contraction patterns with the
// standard re). Those RE2 can express are compiled with the matching Unicode
// meaning of \s and \d; the few that need look-around, \b, possessive
// repetition or Python's "$" (which also matches before a final newline) are
// hand-written.
package wordtok

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/eval/ifeval/internal/punkt"
	"github.com/parleyhq/parley/internal/pystr"
)

// WordTokenize is nltk.word_tokenize(text) with the English Punkt model.
func WordTokenize(text string) []string {
	var out []string
	for _, s := range punkt.English().Tokenize(text) {
		out = append(out, Tokenize(s)...)
	}
	return out
}

type sub struct {
	re   *regexp.Regexp
	repl string
}

func mustSub(pat, repl string) sub { return sub{regexp.MustCompile(pat), repl} }

var (
	startingQuotes = []sub{
		mustSub("([«“‘„]|`+)", " $1 "),
		mustSub(`^"`, "``"),
		mustSub("(``)", " $1 "),
		mustSub(`([ (\[{<])("|'')`, "$1 `` "),
		// (?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w) is splitOpeningQuote.
	}
	punctuationA = []sub{
		// ([^\.])(\.)([\]\)}>"\'»”’ ]*+)\s*$ is finalPeriod(..., true).
		mustSub(`([:,])([^\p{Nd}])`, " $1 $2"),
		// ([:,])$ also matches before a final newline in Python.
		mustSub(`([:,])(\n?)$`, " $1 $2"),
		mustSub(`\.{2,}`, " $0 "),
		mustSub(`[;@#$%&]`, " $0 "),
		mustSub(`[\x{2012}-\x{2015}]`, " $0 "),
		// ([^\.])(\.)([\]\)}>"\']*)\s*$ is finalPeriod(..., false).
	}
	punctuationB = []sub{
		mustSub(`[?!]`, " $0 "),
		mustSub(`([^'])' `, "$1 ' "),
		mustSub(`[*]`, " $0 "),
	}
	parensBrackets = mustSub(`[\]\[(){}<>]`, " $0 ")
	doubleDashes   = mustSub(`--`, " -- ")
	endingQuotes   = []sub{
		mustSub(`([»”’])`, " $1 "),
		mustSub(`''`, " '' "),
		mustSub(`"`, " '' "),
		mustSub(pystr.RegexSpaceClass+`+`, " "),
		mustSub(`([^' ])('[sS]|'[mM]|'[dD]|') `, "$1 $2 "),
		mustSub(`([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) `, "$1 $2 "),
	}
)

// contraction is one of MacIntyre's contraction patterns, split into two
// parts: (?i)<pre>\b(a)(b)<post>. pre is a required leading literal (" " for
// CONTRACTIONS3), post is "\b" or "(?=\s)".
type contraction struct {
	re         *regexp.Regexp // (?i)pre(a)(b)
	boundStart bool           // \b before a
	lookSpace  bool           // (?=\s) after b instead of \b
}

var contractions = []contraction{
	{re: regexp.MustCompile(`(?i)(can)(not)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(d)('ye)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(gim)(me)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(gon)(na)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(got)(ta)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(lem)(me)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(more)('n)`), boundStart: true},
	{re: regexp.MustCompile(`(?i)(wan)(na)`), boundStart: true, lookSpace: true},
	{re: regexp.MustCompile(`(?i) ('t)(is)`)},
	{re: regexp.MustCompile(`(?i) ('t)(was)`)},
}

// Tokenize is NLTKWordTokenizer().tokenize(text) for one sentence.
func Tokenize(text string) []string {
	for _, s := range startingQuotes {
		text = s.apply(text)
	}
	text = splitOpeningQuote(text)

	text = finalPeriod(text, true)
	for _, s := range punctuationA {
		text = s.apply(text)
	}
	text = finalPeriod(text, false)
	for _, s := range punctuationB {
		text = s.apply(text)
	}

	text = parensBrackets.apply(text)
	text = doubleDashes.apply(text)
	text = " " + text + " "
	for _, s := range endingQuotes {
		text = s.apply(text)
	}
	for _, c := range contractions {
		text = c.apply(text)
	}
	return pystr.Fields(text)
}

func (s sub) apply(text string) string { return s.re.ReplaceAllString(text, s.repl) }

// boundaryAt is \b of Python's re module at byte offset i of s. NLTK
// compiles the contraction patterns with re, unlike its other patterns.
func boundaryAt(s string, i int) bool {
	return wordBefore(s, i) != wordAfter(s, i)
}

func wordBefore(s string, i int) bool {
	if i <= 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return pystr.IsWord(r)
}

func wordAfter(s string, i int) bool {
	for _, r := range s[i:] {
		return pystr.IsWord(r)
	}
	return false
}

func spaceAfter(s string, i int) bool {
	for _, r := range s[i:] {
		return pystr.IsSpace(r)
	}
	return false
}

// apply substitutes " \1 \2 " for each match. The literals cannot overlap
// themselves, so filtering the non-overlapping candidates by the boundary
// conditions finds the same matches as Python's search.
func (c contraction) apply(text string) string {
	var b strings.Builder
	last := 0
	for _, m := range c.re.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[0], m[1]
		if c.boundStart && !boundaryAt(text, start) {
			continue
		}
		if c.lookSpace {
			if !spaceAfter(text, end) {
				continue
			}
		} else if !boundaryAt(text, end) {
			continue
		}
		b.WriteString(text[last:start])
		b.WriteString(" " + text[m[2]:m[3]] + " " + text[m[4]:m[5]] + " ")
		last = end
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// quoteSuffixes are the clitics after which an opening ' is not split.
var quoteSuffixes = []string{"re", "ve", "ll", "m", "t", "s", "d", "n"}

// splitOpeningQuote is the substitution
//
//	(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w) -> "\1 "
func splitOpeningQuote(text string) string {
	if !strings.Contains(text, "'") {
		return text
	}
	rs := []rune(text)
	var b strings.Builder
	for i, r := range rs {
		b.WriteRune(r)
		if r != '\'' || i+1 >= len(rs) || !pystr.IsRegexWord(rs[i+1]) {
			continue
		}
		if i > 0 && pystr.IsRegexWord(rs[i-1]) {
			continue
		}
		if cliticAt(rs, i+1) {
			continue
		}
		b.WriteRune(' ')
	}
	return b.String()
}

// cliticAt reports whether (?i)(?:re|ve|ll|m|t|s|d|n)\b matches at rs[i:].
func cliticAt(rs []rune, i int) bool {
	for _, suf := range quoteSuffixes {
		n := len(suf)
		if i+n > len(rs) || !strings.EqualFold(string(rs[i:i+n]), suf) {
			continue
		}
		if i+n == len(rs) || !pystr.IsRegexWord(rs[i+n]) {
			return true
		}
	}
	return false
}

// finalPeriod is one of the two final-period substitutions:
//
//	withSpace: ([^\.])(\.)([\]\)}>"\'»”’ ]*+)\s*$ -> "\1 \2 \3 "
//	otherwise: ([^\.])(\.)([\]\)}>"\']*)\s*$      -> "\1 \2\3 "
//
// Only the last '.' can match, since the closing class excludes '.'.
func finalPeriod(text string, withSpace bool) string {
	q := strings.LastIndexByte(text, '.')
	if q <= 0 || text[q-1] == '.' {
		return text
	}
	closer := func(r rune) bool {
		switch r {
		case ']', ')', '}', '>', '"', '\'':
			return true
		case '»', '”', '’', ' ':
			return withSpace
		}
		return false
	}
	tail := text[q+1:]
	runEnd := 0
	for i, r := range tail {
		if !closer(r) {
			runEnd = i
			break
		}
		runEnd = i + len(string(r))
	}
	if strings.TrimFunc(tail[runEnd:], pystr.IsRegexSpace) != "" {
		return text
	}
	if withSpace {
		return text[:q] + " . " + tail[:runEnd] + " "
	}
	return text[:q] + " ." + tail[:runEnd] + " "
}
