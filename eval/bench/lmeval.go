package bench

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/pystr"
)

// LMEvalVersion is the lm-evaluation-harness release whose GPQA filters
// LMEvalStrict and LMEvalFlexible port (lm_eval/tasks/gpqa/*/_*_yaml
// filter_list, lm_eval/filters/extraction.py, lm_eval/api/metrics.py
// exact_match); eval/bench/testdata/synthetic holds its verdicts on the
// synthetic set, which the tests check the port against.
const LMEvalVersion = "0.4.13"

// LMEvalInvalid is the filters' fallback when nothing is extracted.
const LMEvalInvalid = "[invalid]"

// LMEvalStrict is lm-eval's GPQA "strict-match" filter: the regex
// `(?<=The answer is )(.*)(?=.)` (group_select 0: the first match), then
// take_first. It reads the rest of the line after the first "The answer is "
// that has at least one character after it, less that line's last
// character (the lookahead needs one), stripped: "The answer is (C)." gives
// "(C)", "The answer is (C) since…" gives "(C) since…" (which exact match
// then fails). LMEvalInvalid when there is none.
func LMEvalStrict(response string) string {
	const key = "The answer is "
	for off := 0; ; {
		i := strings.Index(response[off:], key)
		if i < 0 {
			return LMEvalInvalid
		}
		line := response[off+i+len(key):]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		if line != "" {
			_, w := utf8.DecodeLastRuneInString(line)
			return pystr.Strip(line[:len(line)-w])
		}
		off += i + 1
	}
}

var (
	// flexible-extract's regex_pattern.
	lmEvalParenRe = regexp.MustCompile(`\([A-Z]\)`)
	// MultiChoiceRegexFilter's last fallback for four choices:
	// rf":[\s]*({A|B|C|D})", with Python's (Unicode) \s.
	lmEvalColonRe = regexp.MustCompile(`:` + pystr.SpaceClass + `*(A|B|C|D)`)
)

// LMEvalChoices are the choices as lm-eval's GPQA tasks hold them
// (process_docs' preprocess): stripped, " [title]" replaced by ". ", and
// double spaces made single (one pass, as str.replace does).
func LMEvalChoices(choices [4]string) []string {
	out := make([]string, len(choices))
	for i, c := range choices {
		c = pystr.Strip(c)
		c = strings.ReplaceAll(c, " [title]", ". ")
		out[i] = strings.ReplaceAll(c, "  ", " ")
	}
	return out
}

// LMEvalFlexible is lm-eval's GPQA "flexible-extract" filter:
// MultiChoiceRegexFilter with regex_pattern `(\([A-Z]\))`, group_select -1
// (the last match), ignore_case and ignore_punctuation, then take_first.
// choices are the displayed choices in order, as LMEvalChoices gives them.
// In order, the first that finds something wins:
//
//  1. the last "(X)", X any capital letter, in the response as it is;
//  2. the last occurrence of a choice's text in the response, both lower
//     cased and stripped of Unicode punctuation (the choices tried longest
//     pattern first), mapped to its "(X)";
//  3. the last ":" followed by white space and A, B, C or D (capital), as
//     "(X)".
//
// LMEvalInvalid when none does.
func LMEvalFlexible(response string, choices []string) string {
	if m := lmEvalParenRe.FindAllString(response, -1); len(m) > 0 {
		return pystr.Strip(m[len(m)-1])
	}
	keys := make([]string, len(choices))
	toLetter := make(map[string]string, len(choices))
	for i, c := range choices {
		keys[i] = lmEvalIgnore(pystr.Strip(c))
		toLetter[keys[i]] = "(" + string(rune('A'+i)) + ")"
	}
	// sorted(fallback_regexes, key=len, reverse=True): stable, by the length
	// of the escaped pattern.
	slices.SortStableFunc(keys, func(a, b string) int { return pystr.EscapedLen(b) - pystr.EscapedLen(a) })
	if m := pystr.FindAllLiterals(lmEvalIgnore(response), keys); len(m) > 0 {
		if s := pystr.Strip(m[len(m)-1]); s != "" {
			if l, ok := toLetter[s]; ok {
				return l
			}
			return s
		}
	}
	if m := lmEvalColonRe.FindAllStringSubmatch(response, -1); len(m) > 0 {
		return "(" + m[len(m)-1][1] + ")"
	}
	return LMEvalInvalid
}

// lmEvalIgnore is MultiChoiceRegexFilter.filter_ignores with ignore_case and
// ignore_punctuation: lower case, then no Unicode punctuation.
func lmEvalIgnore(s string) string { return pystr.RemovePunct(pystr.Lower(s)) }

// LMEvalExactMatch is lm-eval's exact_match metric as the GPQA tasks
// configure it (ignore_case, ignore_punctuation: Python's str.lower and
// string.punctuation, on numpy strings, which drop trailing NULs): it
// compares a filtered response with the target letter's "(X)".
func LMEvalExactMatch(filtered, letter string) bool {
	norm := func(s string) string { return pystr.RemoveASCIIPunct(pystr.Lower(strings.TrimRight(s, "\x00"))) }
	return norm(filtered) == norm("("+letter+")")
}
