package pystr

import (
	"regexp/syntax"
	"sort"
	"sync"
	"unicode"
)

// pyFixes are sre_compile's _ignorecase_fixes: lowercase letters that
// Python's re.IGNORECASE treats as equal although neither is the other's
// lowercase (they share an uppercase form, or are the same letter drawn
// two ways). Each group is one equivalence class.
var pyFixes = [][]rune{
	{0x69, 0x131},           // i ı
	{0x73, 0x17f},           // s ſ
	{0xb5, 0x3bc},           // µ μ
	{0x345, 0x3b9, 0x1fbe},  // ͅ ι ι
	{0x390, 0x1fd3},         // ΐ ΐ
	{0x3b0, 0x1fe3},         // ΰ ΰ
	{0x3b2, 0x3d0},          // β ϐ
	{0x3b5, 0x3f5},          // ε ϵ
	{0x3b8, 0x3d1},          // θ ϑ
	{0x3ba, 0x3f0},          // κ ϰ
	{0x3c0, 0x3d6},          // π ϖ
	{0x3c1, 0x3f1},          // ρ ϱ
	{0x3c2, 0x3c3},          // ς σ
	{0x3c6, 0x3d5},          // φ ϕ
	{0x432, 0x1c80},         // в ᲀ
	{0x434, 0x1c81},         // д ᲁ
	{0x43e, 0x1c82},         // о ᲂ
	{0x441, 0x1c83},         // с ᲃ
	{0x442, 0x1c84, 0x1c85}, // т ᲄ ᲅ
	{0x44a, 0x1c86},         // ъ ᲆ
	{0x463, 0x1c87},         // ѣ ᲇ
	{0x1c88, 0xa64b},        // ᲈ ꙋ
	{0x1e61, 0x1e9b},        // ṡ ẛ
	{0xfb05, 0xfb06},        // ﬅ ﬆ
}

// foldTables are, for each lowercase rune, the runes Python's
// re.IGNORECASE matches it with: every rune whose lowercase is it or one
// of its fixes.
var foldTables = sync.OnceValue(func() map[rune][]rune {
	inverse := map[rune][]rune{} // lowercase → the runes that lower to it
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l != r {
			inverse[l] = append(inverse[l], r)
		}
	}
	fixes := map[rune][]rune{}
	for _, g := range pyFixes {
		for _, r := range g {
			fixes[r] = g
		}
	}
	out := map[rune][]rune{}
	add := func(l rune) {
		if _, done := out[l]; done {
			return
		}
		group := []rune{l}
		if g, ok := fixes[l]; ok {
			group = g
		}
		var set []rune
		for _, m := range group {
			set = append(set, m)
			set = append(set, inverse[m]...)
		}
		sort.Slice(set, func(i, j int) bool { return set[i] < set[j] })
		out[l] = set
	}
	for l := range inverse {
		add(l)
	}
	for r := range fixes {
		add(r)
	}
	return out
})

// PyFold returns the runes that Python's re.IGNORECASE matches r with,
// sorted: every rune whose simple lowercase equals r's, or is one of the
// _ignorecase_fixes of r's lowercase. Go's (?i) uses Unicode simple case
// folding instead, which leaves out, among others, ı and İ for i, and ﬆ
// for ﬅ.
func PyFold(r rune) []rune {
	l := unicode.ToLower(r)
	if set, ok := foldTables()[l]; ok {
		return set
	}
	return []rune{r}
}

// maxFoldClass bounds the character classes whose members are folded one
// by one; larger ones (Unicode categories) get Go's case folding.
const maxFoldClass = 4096

// IgnoreCase rewrites a Go pattern (as TranslateRegex returns) so that it
// matches case-insensitively the way Python's re.IGNORECASE does: each
// literal rune becomes the class of the runes PyFold gives, and each
// character class of at most maxFoldClass runes (or whose complement is
// that small: a negated class) gains the runes whose lowercase is the
// lowercase of a member or one of its fixes (Python compares lowercased
// characters). Larger classes (\w, \d, \s and their complements, which
// are closed under case) are left as they are.
func IgnoreCase(pattern string) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", err
	}
	return foldRegexp(re).String(), nil
}

func foldRegexp(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpLiteral:
		subs := make([]*syntax.Regexp, len(re.Rune))
		for i, r := range re.Rune {
			subs[i] = foldedClass(PyFold(r))
		}
		if len(subs) == 1 {
			return subs[0]
		}
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
	case syntax.OpCharClass:
		if size(re.Rune) <= maxFoldClass {
			return foldedClass(foldSet(re.Rune))
		}
		// A negated class ([^a-z]): Python excludes every rune whose
		// lowercase the excluded runes' lowercases include.
		if c := complement(re.Rune); size(c) <= maxFoldClass {
			return &syntax.Regexp{Op: syntax.OpCharClass, Rune: complement(foldedClass(foldSet(c)).Rune)}
		}
		return re // a category (\w, \d, \s): closed under case already
	}
	for i, s := range re.Sub {
		re.Sub[i] = foldRegexp(s)
	}
	return re
}

// foldedClass is a character class of the runes in set.
func foldedClass(set []rune) *syntax.Regexp {
	sort.Slice(set, func(i, j int) bool { return set[i] < set[j] })
	var ranges []rune
	for _, r := range set {
		if n := len(ranges); n > 0 && r <= ranges[n-1]+1 {
			ranges[n-1] = max(ranges[n-1], r)
			continue
		}
		ranges = append(ranges, r, r)
	}
	return &syntax.Regexp{Op: syntax.OpCharClass, Rune: ranges}
}

// complement returns the runes not in the class ranges rs, as ranges.
func complement(rs []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(rs); i += 2 {
		if rs[i] > next {
			out = append(out, next, rs[i]-1)
		}
		next = rs[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return out
}

// size is the number of runes in the class ranges rs.
func size(rs []rune) int {
	n := 0
	for i := 0; i+1 < len(rs); i += 2 {
		n += int(rs[i+1]-rs[i]) + 1
	}
	return n
}

// foldSet is the runes of the class ranges rs and their PyFold runes.
func foldSet(rs []rune) []rune {
	var set []rune
	for i := 0; i+1 < len(rs); i += 2 {
		for r := rs[i]; r <= rs[i+1]; r++ {
			set = append(set, r)
			set = append(set, PyFold(r)...)
		}
	}
	return set
}
