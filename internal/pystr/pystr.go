// Package pystr reproduces the parts of Python 3's str and regular-expression
// semantics that the reference scorers rely on (IFEval's in eval/ifeval, the
// benchmarks' in eval/bench): Unicode whitespace for strip and split,
// str.lower (full case mapping, final sigma), str.isupper and str.islower,
// the Unicode meaning of \w, \d and \s (Go's RE2 gives them ASCII
// meanings), re.IGNORECASE's folding, the removal of punctuation by
// str.translate, re.escape's lengths and re.findall over an alternation of
// literals.
//
// Two regular-expression flavours matter. The IFEval checks use the standard
// library's re, whose \s is str.isspace and whose \w is letters, numbers and
// underscore. NLTK 3.10 compiles its patterns (Punkt, the Treebank word
// tokenizer, RegexpTokenizer) with the third-party regex module, whose \s is
// the Unicode White_Space property (without U+001C..U+001F) and whose \w
// follows UTS #18 (alphabetic, marks, decimal digits, connector punctuation,
// joiners; not other numbers such as '²'). The Regex* functions give the
// latter.
package pystr

import (
	"strings"
	"unicode"
)

// SpaceClass is a Go regexp character class equal to Python's \s for str
// patterns (the characters for which str.isspace is true).
const SpaceClass = `[\t-\r\x1c- \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

// NotSpaceClass is Python's \S.
const NotSpaceClass = `[^\t-\r\x1c- \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

// WordClass is Python's \w for str patterns: letters, numbers and underscore.
const WordClass = `[\p{L}\p{N}_]`

// NotWordClass is Python's \W.
const NotWordClass = `[^\p{L}\p{N}_]`

// DigitClass is Python's \d for str patterns (decimal digits, category Nd).
const DigitClass = `\p{Nd}`

// spaceChars is SpaceClass without its brackets, for use inside a class.
const spaceChars = `\t-\r\x1c- \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// IsSpace reports whether Python's str.isspace is true for r.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// IsASCIISpace reports whether r is in Python's string.whitespace.
func IsASCIISpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// IsWord reports whether r matches Python's \w (module re).
func IsWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_'
}

// IsRegexSpace reports whether r matches \s of the regex module (the Unicode
// White_Space property).
func IsRegexSpace(r rune) bool { return unicode.IsSpace(r) }

// IsRegexWord reports whether r matches \w of the regex module: Alphabetic,
// Mark, Decimal_Number, Connector_Punctuation or Join_Control.
func IsRegexWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.Is(unicode.Pc, r) || r == 0x200c || r == 0x200d
}

// RegexSpaceClass is a Go regexp character class equal to \s of the regex
// module.
const RegexSpaceClass = `[\t-\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

// IsDigit reports whether r matches Python's \d.
func IsDigit(r rune) bool { return unicode.Is(unicode.Nd, r) }

// Strip is Python's str.strip() with no argument.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// LStrip is Python's str.lstrip() with no argument.
func LStrip(s string) string { return strings.TrimLeftFunc(s, IsSpace) }

// RStrip is Python's str.rstrip() with no argument.
func RStrip(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// Fields is Python's str.split() with no argument.
func Fields(s string) []string { return strings.FieldsFunc(s, IsSpace) }

// Lower is Python's str.lower(): simple case mapping, except that U+0130
// becomes "i\u0307" and a capital sigma at the end of a word becomes the
// final form ς (Unicode's Final_Sigma condition).
func Lower(s string) string {
	if !strings.ContainsAny(s, "\u0130\u03a3") {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(rs, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is Unicode's Final_Sigma condition for rs[i], as CPython tests
// it: a cased letter before (skipping case-ignorable characters) and none
// after.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && caseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !cased(rs[j])
}

func cased(r rune) bool { return isUpperRune(r) || isLowerRune(r) || unicode.IsTitle(r) }

// caseIgnorable is Unicode's Case_Ignorable property: marks, format
// characters, modifier letters and symbols, and the word-internal
// punctuation of Word_Break MidLetter, MidNumLet and Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case ':', '\u00b7', '\u0387', '\u055f', '\u05f4', '\u2027', '\ufe13', '\ufe55', '\uff1a', // MidLetter
		'.', '\u2018', '\u2019', '\u2024', '\ufe52', '\uff07', '\uff0e', // MidNumLet
		'\'': // Single_Quote
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// isUpperRune is Python's Py_UNICODE_ISUPPER (the Uppercase property).
func isUpperRune(r rune) bool {
	return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r)
}

// isLowerRune is Python's Py_UNICODE_ISLOWER (the Lowercase property).
func isLowerRune(r rune) bool {
	return unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r)
}

// IsUpper is Python's str.isupper(): every cased character is uppercase and
// there is at least one.
func IsUpper(s string) bool {
	cased := false
	for _, r := range s {
		if isLowerRune(r) || unicode.IsTitle(r) {
			return false
		}
		if isUpperRune(r) {
			cased = true
		}
	}
	return cased
}

// IsLower is Python's str.islower(): every cased character is lowercase and
// there is at least one.
func IsLower(s string) bool {
	cased := false
	for _, r := range s {
		if isUpperRune(r) || unicode.IsTitle(r) {
			return false
		}
		if isLowerRune(r) {
			cased = true
		}
	}
	return cased
}

// TranslateRegex rewrites a Python re pattern into Go RE2 syntax with the
// same Unicode meaning of \w, \W, \d, \D, \s and \S (and \Z as \z). Inside a
// character class only the positive forms (\w, \d, \s) are widened; \W, \D,
// \S inside a class, and \b, \B anywhere, keep Go's ASCII meaning. Python
// syntax that RE2 lacks (look-around, back-references) is left for
// regexp.Compile to reject.
func TranslateRegex(pat string) string {
	var b strings.Builder
	rs := []rune(pat)
	inClass := false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs):
			next := rs[i+1]
			i++
			if inClass {
				switch next {
				case 'w':
					b.WriteString(`\p{L}\p{N}_`)
				case 'd':
					b.WriteString(`\p{Nd}`)
				case 's':
					b.WriteString(spaceChars)
				default:
					b.WriteRune('\\')
					b.WriteRune(next)
				}
				continue
			}
			switch next {
			case 'w':
				b.WriteString(WordClass)
			case 'W':
				b.WriteString(NotWordClass)
			case 'd':
				b.WriteString(DigitClass)
			case 'D':
				b.WriteString(`\P{Nd}`)
			case 's':
				b.WriteString(SpaceClass)
			case 'S':
				b.WriteString(NotSpaceClass)
			case 'Z':
				b.WriteString(`\z`)
			default:
				b.WriteRune('\\')
				b.WriteRune(next)
			}
		case r == '[' && !inClass:
			inClass = true
			b.WriteRune(r)
			// A ']' right after '[' or '[^' is a literal in Python.
			if i+1 < len(rs) && rs[i+1] == '^' {
				b.WriteRune('^')
				i++
			}
			if i+1 < len(rs) && rs[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
		case r == ']' && inClass:
			inClass = false
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
