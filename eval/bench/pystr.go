package bench

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Python's string semantics, where the reference scorers' results depend on
// them: str.isspace, str.strip, str.lower (full case mapping, final sigma),
// the removal of Unicode punctuation (category P), re.escape's lengths and
// re.findall over an alternation of literals (empty matches included, as
// Python 3.7 and later find them).

// pyIsSpace reports whether Python's str.isspace (and the \s of a str
// pattern) holds for r: the characters of bidirectional class WS, B or S and
// those of category Zs.
func pyIsSpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x1f, r == ' ', r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// pySpaceClass is pyIsSpace as a regexp character class body (Go's \s is
// ASCII and leaves out \v).
const pySpaceClass = `\t-\r\x{1c}-\x{1f} \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyLStrip is Python's str.lstrip().
func pyLStrip(s string) string { return strings.TrimLeftFunc(s, pyIsSpace) }

// pyLower is Python's str.lower(): the simple lower-case mapping, but for
// U+0130 (İ, whose full mapping is i + U+0307) and the capital sigma,
// which becomes ς at the end of a word (the Final_Sigma condition).
func pyLower(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(s, i) {
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

// finalSigma is CPython's handle_capital_sigma: the Σ at byte i follows a
// cased letter (case-ignorable characters skipped) and no cased letter
// follows it.
func finalSigma(s string, i int) bool {
	before := s[:i]
	for before != "" {
		r, w := utf8.DecodeLastRuneInString(before)
		if !caseIgnorable(r) {
			if !cased(r) {
				return false
			}
			break
		}
		before = before[:len(before)-w]
	}
	if before == "" {
		return false
	}
	for _, r := range s[i+utf8.RuneLen(0x3a3):] {
		if !caseIgnorable(r) {
			return !cased(r)
		}
	}
	return true
}

// cased is Unicode's Cased property: Lu, Ll, Lt, Other_Lowercase,
// Other_Uppercase.
func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable property: Mn, Me, Cf, Lm, Sk
// and the word-break classes MidLetter, MidNumLet and Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2027, 0xfe13, 0xfe55, 0xff1a, // MidLetter
		'.', 0x2018, 0x2019, 0x2024, 0xfe52, 0xff07, 0xff0e, // MidNumLet
		'\'': // Single_Quote
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// removeUnicodePunct deletes the characters of category P, as
// str.translate with a table of every such character does.
func removeUnicodePunct(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) {
			return -1
		}
		return r
	}, s)
}

// asciiPunct is Python's string.punctuation.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// removeASCIIPunct deletes the characters of string.punctuation.
func removeASCIIPunct(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
}

// pyEscapedLen is len(re.escape(s)) in Python 3.7 and later: the code
// points of s plus a backslash before each of ()[]{}?*+-|^$\.&~# and the
// white space \t\n\r\v\f and space.
func pyEscapedLen(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r < 0x80 && strings.ContainsRune("()[]{}?*+-|^$\\.&~# \t\n\r\v\f", r) {
			n++
		}
	}
	return n
}

// pyFindAllLiterals is Python's re.findall(pattern, s) for a pattern that
// is the alternation of the literals alts (each re.escape'd), in order: at
// each position the first alternative that matches wins; after an empty
// match the next one may not be empty at the same position (it may be a
// non-empty one there); an empty match may follow a non-empty one.
func pyFindAllLiterals(s string, alts []string) []string {
	var out []string
	pos, mustAdvance := 0, false
	for pos <= len(s) {
		match, at := "", -1
	search:
		for i := pos; i <= len(s); {
			for _, a := range alts {
				if a == "" && mustAdvance && i == pos {
					continue
				}
				if strings.HasPrefix(s[i:], a) {
					match, at = a, i
					break search
				}
			}
			if i == len(s) {
				break
			}
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
		}
		if at < 0 {
			break
		}
		out = append(out, match)
		pos, mustAdvance = at+len(match), match == ""
	}
	return out
}
