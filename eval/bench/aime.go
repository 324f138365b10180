package bench

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Column names accepted for AIME files, first match wins. They cover the
// public Hugging Face datasets (HuggingFaceH4/aime_2024: id, problem,
// answer, year; Maxwell-Jia/AIME_2024: ID, Problem, Answer;
// yentinglin/aime_2025 and math-ai/aime25: id, problem, answer;
// opencompass/AIME2025: question, answer; MathArena: problem_idx, problem,
// answer).
var (
	aimeProblemCols = []string{"problem", "Problem", "question", "Question"}
	aimeAnswerCols  = []string{"answer", "Answer"}
	aimeIDCols      = []string{"id", "ID", "problem_idx", "idx", "Problem ID"}
	aimeYearCols    = []string{"year", "Year"}
)

// AIMEItem is one AIME problem and its integer answer.
type AIMEItem struct {
	ID      string // the file's id, or "aime-" + a hash of the problem when it has none
	Year    int    // 0 when the file has no year column
	Problem string
	Answer  int64
}

// LoadAIME reads AIME items from a JSON(L), parquet or CSV file. Accepted
// columns, first match wins: problem, Problem, question, Question; answer,
// Answer; id, ID, problem_idx, idx, Problem ID (optional); year, Year
// (optional).
func LoadAIME(path string) ([]AIMEItem, error) {
	recs, err := ReadRecords(path)
	if err != nil {
		return nil, fmt.Errorf("bench.LoadAIME: %w", err)
	}
	items, err := AIMEItems(recs)
	if err != nil {
		return nil, fmt.Errorf("bench.LoadAIME: %w", err)
	}
	return items, nil
}

// AIMEItems turns records into AIME items. A problem and an integer answer
// are required; IDs must be unique.
func AIMEItems(recs []Record) ([]AIMEItem, error) {
	items := make([]AIMEItem, 0, len(recs))
	seen := make(map[string]string, len(recs))
	for _, r := range recs {
		var it AIMEItem
		p, _, ok := r.Text(aimeProblemCols...)
		if !ok {
			return nil, fmt.Errorf("bench.AIMEItems: %s: no problem (columns %q)", r.Where(), aimeProblemCols)
		}
		it.Problem = strings.TrimSpace(p)
		a, col, ok := r.Text(aimeAnswerCols...)
		if !ok {
			return nil, fmt.Errorf("bench.AIMEItems: %s: no answer (columns %q)", r.Where(), aimeAnswerCols)
		}
		if it.Answer, ok = ParseInteger(a); !ok {
			return nil, fmt.Errorf("bench.AIMEItems: %s: column %q = %q is not an integer", r.Where(), col, a)
		}
		if id, _, ok := r.Text(aimeIDCols...); ok {
			it.ID = strings.TrimSpace(id)
		} else {
			it.ID = "aime-" + shortHash(it.Problem)
		}
		if prev, dup := seen[it.ID]; dup {
			return nil, fmt.Errorf("bench.AIMEItems: %s: duplicate ID %q (first at %s)", r.Where(), it.ID, prev)
		}
		seen[it.ID] = r.Where()
		if y, col, ok := r.Text(aimeYearCols...); ok {
			year, ok := ParseInteger(y)
			if !ok {
				return nil, fmt.Errorf("bench.AIMEItems: %s: column %q = %q is not a year", r.Where(), col, y)
			}
			it.Year = int(year)
		}
		items = append(items, it)
	}
	return items, nil
}

// AIMEInstruction is the math instruction of Qwen3's model card ("Math
// Problems: Include 'Please reason step by step, and put your final answer
// within \boxed{}.' in the prompt").
const AIMEInstruction = `Please reason step by step, and put your final answer within \boxed{}.`

// Prompt renders the problem followed, on a new line, by AIMEInstruction.
func (it AIMEItem) Prompt() string {
	return it.Problem + "\n" + AIMEInstruction
}

// AIMEQuestions returns the questions of one run, in item order.
func AIMEQuestions(items []AIMEItem, run int) []Question {
	out := make([]Question, len(items))
	for i, it := range items {
		out[i] = Question{ID: it.ID, Run: run, Prompt: it.Prompt(), Expected: strconv.FormatInt(it.Answer, 10)}
	}
	return out
}

// ExtractBoxed returns the content of the last complete \boxed{…} (or
// \fbox{…}) in s, braces balanced ("\boxed{\frac{1}{2}}" gives
// "\frac{1}{2}"; escaped braces \{ \} do not count). A box without braces
// holds a number: "\boxed 7" and "\boxed 7." give "7", "\boxed 16.0" gives
// "16.0", but "\boxed 7x", "\boxed 3/4" or "\boxed \pi" are no box. A final
// \boxed cut off before its closing brace (or with nothing readable after
// it) is passed over for the one before it.
func ExtractBoxed(s string) (content string, ok bool) {
	for end := len(s); ; {
		start, after := lastBox(s[:end])
		if start < 0 {
			return "", false
		}
		if c, ok := balanced(s[after:]); ok {
			return c, true
		}
		if c, ok := bareNumber(s[after:]); ok {
			return c, true
		}
		end = start
	}
}

// lastBox returns where the last "\boxed" or "\fbox" in s starts and ends,
// or -1, -1.
func lastBox(s string) (start, after int) {
	start, after = -1, -1
	for _, kw := range []string{`\boxed`, `\fbox`} {
		if i := strings.LastIndex(s, kw); i > start {
			start, after = i, i+len(kw)
		}
	}
	return start, after
}

// balanced reads optional spaces, then a {…} group with balanced braces, and
// returns what is inside it.
func balanced(s string) (string, bool) {
	t := strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(t, "{") {
		return "", false
	}
	depth := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++ // skip the escaped character
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return t[1:i], true
			}
		}
	}
	return "", false
}

// A braceless box's number, and what may not follow it (it would make the
// number part of a longer expression).
var (
	bareNumberRe = regexp.MustCompile(`^[ \t]*([0-9]+(?:\.[0-9]+)?)`)
	bareAfterRe  = regexp.MustCompile(`^(?:[A-Za-z0-9_^/{(\\!]|\.[0-9]|,[0-9])`)
)

// bareNumber reads optional spaces, then a number that nothing but spaces,
// punctuation or the end of the line follows (see ExtractBoxed).
func bareNumber(s string) (string, bool) {
	m := bareNumberRe.FindStringSubmatchIndex(s)
	if m == nil || bareAfterRe.MatchString(s[m[1]:]) {
		return "", false
	}
	return s[m[2]:m[3]], true
}

var (
	integerRe = regexp.MustCompile(`^[+-]?[0-9]+$`)
	// Thousands separators: "1,234", "12,345,678"; a decimal point may
	// follow ("1,000.0").
	groupedRe = regexp.MustCompile(`^[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.|$)`)
	// A number written with a fraction of zeros: "16.0", "16.", "16.000".
	zeroFractionRe = regexp.MustCompile(`^([+-]?[0-9]+)\.0*$`)
)

// ParseInteger reads an integer: LaTeX text wrappers (\text{…},
// \textbf{…}, …) are unwrapped, $ (and \$), braces and LaTeX spacing (\,
// \! \; \: ~) are removed, and what remains, spaces removed, must be an
// optional sign and decimal digits (leading zeros allowed: "033" is 33), a
// fraction of zeros allowed ("16.0" is 16). Commas must be thousands
// separators ("1,000", "1{,}000"): "1, 23" and "1,23" are no integer, where
// deleting the comma would read 123. Anything else — "33.5",
// "\frac{1}{2}", "x=3", an overflow — is not an integer.
func ParseInteger(s string) (int64, bool) {
	for range 3 {
		s = texWrapRe.ReplaceAllString(s, "$1")
	}
	s = strings.NewReplacer(`\$`, "", "$", "", "{", "", "}", "",
		`\,`, " ", `\!`, " ", `\;`, " ", `\:`, " ", `\ `, " ", "~", " ").Replace(s)
	if strings.Contains(s, ",") {
		// Checked before the spaces go: "1, 234" is a list.
		if !groupedRe.MatchString(strings.TrimSpace(s)) {
			return 0, false
		}
		s = strings.ReplaceAll(s, ",", "")
	}
	s = strings.Join(strings.Fields(s), "")
	if m := zeroFractionRe.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	if !integerRe.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

var (
	// The name an answer may be given to: "n", "a_1", "m+n", "p + q + r".
	answerNameRe = regexp.MustCompile(`^[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?(?:\s*\+\s*[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?)*$`)
	// A unit or sign after the number: \%, %, degrees, a unit in a text
	// wrapper ("\text{ cm}", "\,\mathrm{m}^2", "\text{ square units}").
	answerSuffixRe = regexp.MustCompile(`(?:\\[,;:! ]|~|\s)*(?:\\%|%|\^\s*\{?\s*\\circ\s*\}?|°|\\degree|\\(?:text|textrm|mathrm|mbox|textnormal|textup)\s*\{\s*([A-Za-z][A-Za-z. ]*)\}(?:\^\{?[23]\}?)?)\s*$`)
	// Words a "unit" may not hold: they join the number to something else.
	unitConnectives = []string{"or", "and", "to", "plus", "minus", "times", "than", "more", "less", "least", "most", "not", "from", "between"}
)

// AnswerInteger reads the integer a \boxed{} answer gives: what
// ParseInteger reads, also when a unit or sign follows it ("104 \text{
// cm}", "36\%", "382^\circ"), a dollar sign precedes it ("\$154") or it is
// given to a name ("n = 467", "m+n = 467"). It refuses what is not
// unambiguous: lists ("1, 23"), more than one "=" ("x = 3 or x = 5"), a
// left side that is not a name ("2x = 10"), words that join the number to
// another ("3 \text{ or more}").
func AnswerInteger(s string) (int64, bool) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), `\displaystyle`))
	if strings.Count(s, "=") == 1 {
		lhs, rhs, _ := strings.Cut(s, "=")
		if !answerNameRe.MatchString(strings.TrimSpace(lhs)) {
			return 0, false
		}
		s = strings.TrimSpace(rhs)
	} else if strings.Contains(s, "=") {
		return 0, false
	}
	for range 2 { // "382^\circ \text{F}"
		m := answerSuffixRe.FindStringSubmatchIndex(s)
		if m == nil {
			break
		}
		if m[2] >= 0 {
			for _, w := range strings.Fields(strings.ToLower(s[m[2]:m[3]])) {
				if slices.Contains(unitConnectives, w) {
					return 0, false
				}
			}
		}
		s = s[:m[0]]
	}
	if m := fracRe.FindStringSubmatch(s); m != nil {
		a, aok := ParseInteger(m[1])
		b, bok := ParseInteger(m[2])
		if !aok || !bok || b == 0 || a%b != 0 {
			return 0, false
		}
		return a / b, true
	}
	return ParseInteger(s)
}

// A fraction of integers: "\frac{728}{2}", "\dfrac{1}{1}".
var fracRe = regexp.MustCompile(`^\\[dt]?frac\s*\{\s*([+-]?[0-9]+)\s*\}\s*\{\s*([0-9]+)\s*\}$`)

// An answer stated without a box, at the end of its line: "The answer is
// 42.", "Final answer: $502$", "**Answer:** 7".
var unboxedRe = regexp.MustCompile(`(?i)\banswer\s*(?:is\s*)?[:：=]?\s*\$?\s*([+-]?[0-9][0-9,]*(?:\.[0-9]+)?)\s*\$?\s*\.?[ \t]*(?:\n|$)`)

// ExtractAIMEAnswer returns the integer in the last \boxed{} of a response
// (see ExtractBoxed and AnswerInteger). text is the boxed content, returned
// even when it is not an integer; ok reports an integer was read. A
// response with no \boxed at all may state its answer in words, at the end
// of a line: the last "answer is N." or "Answer: N" counts.
func ExtractAIMEAnswer(response string) (n int64, text string, ok bool) {
	text, found := ExtractBoxed(response)
	if !found {
		if strings.Contains(response, `\boxed`) || strings.Contains(response, `\fbox`) {
			return 0, "", false
		}
		ms := unboxedRe.FindAllStringSubmatch(strings.NewReplacer("**", "", "__", "").Replace(response), -1)
		if len(ms) == 0 {
			return 0, "", false
		}
		text = ms[len(ms)-1][1]
	}
	n, ok = AnswerInteger(text)
	return n, text, ok
}
