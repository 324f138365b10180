package pystr

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// RemovePunct deletes the characters of Unicode category P, as
// str.translate with a table of every such character does.
func RemovePunct(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) {
			return -1
		}
		return r
	}, s)
}

// ASCIIPunct is Python's string.punctuation.
const ASCIIPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// RemoveASCIIPunct deletes the characters of string.punctuation.
func RemoveASCIIPunct(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && strings.ContainsRune(ASCIIPunct, r) {
			return -1
		}
		return r
	}, s)
}

// EscapedLen is len(re.escape(s)) in Python 3.7 and later: the code
// points of s plus a backslash before each of ()[]{}?*+-|^$\.&~# and the
// white space \t\n\r\v\f and space.
func EscapedLen(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r < 0x80 && strings.ContainsRune("()[]{}?*+-|^$\\.&~# \t\n\r\v\f", r) {
			n++
		}
	}
	return n
}

// FindAllLiterals is Python's re.findall(pattern, s) for a pattern that
// is the alternation of the literals alts (each re.escape'd), in order: at
// each position the first alternative that matches wins; after an empty
// match the next one may not be empty at the same position (it may be a
// non-empty one there); an empty match may follow a non-empty one (as
// Python 3.7 and later find them).
func FindAllLiterals(s string, alts []string) []string {
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
