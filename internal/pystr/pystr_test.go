package pystr

import (
	"regexp"
	"testing"
	"unicode"
)

// Expected values below are CPython 3.11's.

func TestCase(t *testing.T) {
	for _, c := range []struct {
		s              string
		isUpper, isLow bool
		lower          string
	}{
		{"ABC", true, false, "abc"},
		{"AbC", false, false, "abc"},
		{"abc", false, true, "abc"},
		{"123", false, false, "123"},
		{"A1", true, false, "a1"},
		{"", false, false, ""},
		{"ǅ", false, false, "ǆ"},
		{"Ǆ", true, false, "ǆ"},
		{"ⅰ", false, true, "ⅰ"},
		{"Ⅰ", true, false, "ⅰ"},
		{"ª", false, true, "ª"},
		{"ß", false, true, "ß"},
		{"ΣΑΣ", true, false, "σας"},
		{"A.B.", true, false, "a.b."},
		{"İ", true, false, "i\u0307"},
		{"Ⓐ", true, false, "ⓐ"},
		{"ΣΑΣ ΣΑΣ.", true, false, "σας σας."},
		{"Σ", true, false, "σ"},
		{"ΑΣa", false, false, "ασa"},
		{"ΑΣ'", true, false, "ας'"},
		// U+055F (Armenian abbreviation mark) is Word_Break MidLetter, so
		// Case_Ignorable: skipped when testing the sigma's neighbours.
		{"Α\u055fΣ", true, false, "α\u055fς"},
		{"ΑΣ\u055fΑ", true, false, "ασ\u055fα"},
		{"ΑΣ Σ ΑΣ.Α ΑΣ\u0301", true, false, "ας σ ασ.α ας\u0301"},
		{"ABC déF", false, false, "abc déf"},
	} {
		if got := IsUpper(c.s); got != c.isUpper {
			t.Errorf("IsUpper(%q) = %v, want %v", c.s, got, c.isUpper)
		}
		if got := IsLower(c.s); got != c.isLow {
			t.Errorf("IsLower(%q) = %v, want %v", c.s, got, c.isLow)
		}
		if got := Lower(c.s); got != c.lower {
			t.Errorf("Lower(%q) = %q, want %q", c.s, got, c.lower)
		}
	}
}

func TestClasses(t *testing.T) {
	for _, c := range []struct {
		r                    rune
		regexWord, reWord    bool
		regexSpace, strSpace bool
	}{
		{'A', true, true, false, false},
		{'_', true, true, false, false},
		{'0', true, true, false, false},
		{'²', false, true, false, false},
		{0x300, true, false, false, false},
		{0x94d, true, false, false, false},
		{0x93f, true, false, false, false},
		{0x200c, true, false, false, false},
		{0x2160, true, true, false, false},
		{0x24b6, true, false, false, false},
		{0x203f, true, false, false, false},
		{'-', false, false, false, false},
		{' ', false, false, true, true},
		{0x1c, false, false, false, true},
		{0xa0, false, false, true, true},
		{0x661, true, true, false, false},
		{0x1f600, false, false, false, false},
	} {
		if got := IsRegexWord(c.r); got != c.regexWord {
			t.Errorf("IsRegexWord(%U) = %v, want %v", c.r, got, c.regexWord)
		}
		if got := IsWord(c.r); got != c.reWord {
			t.Errorf("IsWord(%U) = %v, want %v", c.r, got, c.reWord)
		}
		if got := IsRegexSpace(c.r); got != c.regexSpace {
			t.Errorf("IsRegexSpace(%U) = %v, want %v", c.r, got, c.regexSpace)
		}
		if got := IsSpace(c.r); got != c.strSpace {
			t.Errorf("IsSpace(%U) = %v, want %v", c.r, got, c.strSpace)
		}
		s := string(c.r)
		if got := regexp.MustCompile(`^` + SpaceClass + `$`).MatchString(s); got != c.strSpace {
			t.Errorf("SpaceClass matches %U = %v, want %v", c.r, got, c.strSpace)
		}
		if got := regexp.MustCompile(`^` + RegexSpaceClass + `$`).MatchString(s); got != c.regexSpace {
			t.Errorf("RegexSpaceClass matches %U = %v, want %v", c.r, got, c.regexSpace)
		}
		if got := regexp.MustCompile(`^` + WordClass + `$`).MatchString(s); got != c.reWord {
			t.Errorf("WordClass matches %U = %v, want %v", c.r, got, c.reWord)
		}
	}
}

// TestSpaceEverywhere: IsSpace and SpaceClass are str.isspace over every
// code point: bidirectional class WS, B or S, or category Zs (CPython's
// _PyUnicode_IsWhitespace), listed here as CPython 3.11's table has them.
func TestSpaceEverywhere(t *testing.T) {
	want := func(r rune) bool {
		switch {
		case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x1f, r == ' ', r == 0x85, r == 0xa0, r == 0x1680,
			r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
			return true
		}
		return false
	}
	class := regexp.MustCompile(`^` + SpaceClass + `$`)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		w := want(r)
		if IsSpace(r) != w {
			t.Errorf("IsSpace(%U) = %v, want %v", r, !w, w)
		}
		if class.MatchString(string(r)) != w {
			t.Errorf("SpaceClass matches %U = %v, want %v", r, !w, w)
		}
	}
}

func TestStripFields(t *testing.T) {
	s := "\x1c\u00a0 a b\u3000c \n"
	if got := Strip(s); got != "a b\u3000c" {
		t.Errorf("Strip(%q) = %q, want %q", s, got, "a b\u3000c")
	}
	if got := LStrip(s); got != "a b\u3000c \n" {
		t.Errorf("LStrip(%q) = %q", s, got)
	}
	if got := Strip("\v\x1c a \u3000"); got != "a" {
		t.Errorf("Strip = %q, want %q", got, "a")
	}
	if got := RStrip(s); got != "\x1c\u00a0 a b\u3000c" {
		t.Errorf("RStrip(%q) = %q", s, got)
	}
	if got := Fields(s); len(got) != 3 || got[2] != "c" {
		t.Errorf("Fields(%q) = %q, want [a b c]", s, got)
	}
}

func TestTranslateRegex(t *testing.T) {
	for _, c := range []struct {
		pat, in string
		want    bool
	}{
		{`^\w+$`, "héllo", true},
		{`^\w+$`, "x²", true},
		{`^\d$`, "٣", true},
		{`^\s$`, "\u3000", true},
		{`^\S+$`, "a\u00a0", false},
		{`^[\w-]+$`, "naïve-x", true},
		{`^[]a]+$`, "]a", true},
		{`^[^]a]$`, "b", true},
		{`^\W$`, "é", false},
		{`^\D$`, "x", true},
		{`a\Z`, "ba", true},
		{`\.`, "a.b", true},
	} {
		re, err := regexp.Compile(TranslateRegex(c.pat))
		if err != nil {
			t.Errorf("TranslateRegex(%q) = %q: %v", c.pat, TranslateRegex(c.pat), err)
			continue
		}
		if got := re.MatchString(c.in); got != c.want {
			t.Errorf("TranslateRegex(%q) matches %q = %v, want %v", c.pat, c.in, got, c.want)
		}
	}
}
