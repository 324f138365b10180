package bench

import (
	"fmt"
	"regexp"
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
// "\frac{1}{2}"; escaped braces \{ \} do not count). A final \boxed{ cut
// off before its closing brace is passed over for the one before it.
func ExtractBoxed(s string) (content string, ok bool) {
	for end := len(s); ; {
		start, after := lastBox(s[:end])
		if start < 0 {
			return "", false
		}
		if c, ok := balanced(s[after:]); ok {
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

var integerRe = regexp.MustCompile(`^[+-]?[0-9]+$`)

// ParseInteger reads an integer answer: LaTeX text wrappers (\text{…},
// \textbf{…}, …) are unwrapped, then $, commas, braces, spaces and LaTeX
// spacing (\, \! \; \: ~) are removed, and what remains must be an optional
// sign and decimal digits (leading zeros allowed: "033" is 33). Anything else
// — "33.5", "\frac{1}{2}", "x=3", an overflow — is not an integer.
func ParseInteger(s string) (int64, bool) {
	for range 3 {
		s = texWrapRe.ReplaceAllString(s, "$1")
	}
	s = strings.NewReplacer(`\,`, "", `\!`, "", `\;`, "", `\:`, "", `\ `, "", "~", "",
		"$", "", ",", "", "{", "", "}", "").Replace(s)
	s = strings.Join(strings.Fields(s), "")
	if !integerRe.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// ExtractAIMEAnswer returns the integer in the last \boxed{} of a response
// (see ExtractBoxed and ParseInteger). text is the boxed content, returned
// even when it is not an integer; ok reports an integer was read.
func ExtractAIMEAnswer(response string) (n int64, text string, ok bool) {
	text, found := ExtractBoxed(response)
	if !found {
		return 0, "", false
	}
	n, ok = ParseInteger(text)
	return n, text, ok
}
