package bench

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// GPQA column names: those of the public gpqa_diamond.csv (Idavidrein/gpqa)
// and of its parquet conversion on the Hugging Face Hub.
const (
	GPQAColQuestion   = "Question"
	GPQAColCorrect    = "Correct Answer"
	GPQAColIncorrect1 = "Incorrect Answer 1"
	GPQAColIncorrect2 = "Incorrect Answer 2"
	GPQAColIncorrect3 = "Incorrect Answer 3"
	GPQAColRecordID   = "Record ID"
	GPQAColDomain     = "High-level domain"
	GPQAColSubdomain  = "Subdomain"
)

// GPQAItem is one GPQA question with its correct and three incorrect answers
// in the file's order (unshuffled).
type GPQAItem struct {
	ID        string // "Record ID", or "gpqa-" + a hash of the question when the file has none
	Question  string
	Correct   string
	Incorrect [3]string
	Domain    string // "High-level domain", if present
	Subdomain string // "Subdomain", if present
}

// LoadGPQA reads GPQA items from a CSV, parquet or JSON(L) file with the
// public dataset's column names. The data is the user's local file: GPQA must
// never be committed.
func LoadGPQA(path string) ([]GPQAItem, error) {
	recs, err := ReadRecords(path)
	if err != nil {
		return nil, fmt.Errorf("bench.LoadGPQA: %w", err)
	}
	items, err := GPQAItems(recs)
	if err != nil {
		return nil, fmt.Errorf("bench.LoadGPQA: %w", err)
	}
	return items, nil
}

// GPQAItems turns records into GPQA items. The question and the four answers
// are required (surrounding white space is trimmed); item IDs must be unique.
func GPQAItems(recs []Record) ([]GPQAItem, error) {
	items := make([]GPQAItem, 0, len(recs))
	seen := make(map[string]string, len(recs))
	for _, r := range recs {
		var it GPQAItem
		var fields [5]string
		for i, col := range []string{GPQAColQuestion, GPQAColCorrect, GPQAColIncorrect1, GPQAColIncorrect2, GPQAColIncorrect3} {
			s, _, ok := r.Text(col)
			if !ok {
				return nil, fmt.Errorf("bench.GPQAItems: %s: missing or empty column %q", r.Where(), col)
			}
			fields[i] = strings.TrimSpace(s)
		}
		it.Question, it.Correct = fields[0], fields[1]
		copy(it.Incorrect[:], fields[2:])
		if id, _, ok := r.Text(GPQAColRecordID, "id", "ID"); ok {
			it.ID = strings.TrimSpace(id)
		} else {
			it.ID = "gpqa-" + shortHash(it.Question)
		}
		if prev, dup := seen[it.ID]; dup {
			return nil, fmt.Errorf("bench.GPQAItems: %s: duplicate ID %q (first at %s)", r.Where(), it.ID, prev)
		}
		seen[it.ID] = r.Where()
		it.Domain, _, _ = r.Text(GPQAColDomain)
		it.Subdomain, _, _ = r.Text(GPQAColSubdomain)
		items = append(items, it)
	}
	return items, nil
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// Letters are the choice letters, in display order.
const Letters = "ABCD"

// GPQAQuestion is one GPQA item as shown in one run: the four answers in a
// shuffled order and the letter of the correct one.
type GPQAQuestion struct {
	ItemID   string
	Run      int
	Question string
	Choices  [4]string // displayed as A) … D)
	Correct  string    // "A" … "D"
}

// ShuffleGPQA shuffles an item's four answers for one run. The order is a
// pure function of (seed, run, item ID): the same in every process and Go
// version, different across runs and items. It is the permutation numbered
// SHA-256("parley/gpqa/<seed>/<run>/<id>")[:8] (big-endian) mod 24, in
// Lehmer-code order over (correct, incorrect 1, 2, 3).
func ShuffleGPQA(item GPQAItem, seed int64, run int) GPQAQuestion {
	h := sha256.Sum256([]byte(fmt.Sprintf("parley/gpqa/%d/%d/%s", seed, run, item.ID)))
	code := binary.BigEndian.Uint64(h[:8]) % 24
	pool := []string{item.Correct, item.Incorrect[0], item.Incorrect[1], item.Incorrect[2]}
	src := []int{0, 1, 2, 3}
	q := GPQAQuestion{ItemID: item.ID, Run: run, Question: item.Question}
	for pos, radix := 0, uint64(6); pos < 4; pos++ {
		k := int(code / radix)
		code %= radix
		if pos < 3 {
			radix /= uint64(3 - pos)
		}
		idx := src[k]
		src = append(src[:k], src[k+1:]...)
		q.Choices[pos] = pool[idx]
		if idx == 0 {
			q.Correct = Letters[pos : pos+1]
		}
	}
	return q
}

// gpqaTemplate is the multiple-choice prompt of OpenAI's simple-evals
// (QUERY_TEMPLATE_MULTICHOICE), which its GPQA evaluation uses.
const gpqaTemplate = "Answer the following multiple choice question. The last line of your response " +
	"should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. " +
	"Think step by step before answering.\n\n%s\n\nA) %s\nB) %s\nC) %s\nD) %s"

// Prompt renders the question in the simple-evals multiple-choice form.
func (q GPQAQuestion) Prompt() string {
	return fmt.Sprintf(gpqaTemplate, q.Question, q.Choices[0], q.Choices[1], q.Choices[2], q.Choices[3])
}

// GPQAQuestions returns the questions of one run, shuffled with seed, in
// item order.
func GPQAQuestions(items []GPQAItem, seed int64, run int) []Question {
	out := make([]Question, len(items))
	for i, it := range items {
		q := ShuffleGPQA(it, seed, run)
		out[i] = Question{ID: it.ID, Run: run, Prompt: q.Prompt(), Expected: q.Correct}
	}
	return out
}

var (
	// Inline LaTeX text wrappers: \text{C} → C.
	texWrapRe = regexp.MustCompile(`\\(?:text|textbf|textrm|mathrm|mathbf|mathit|textit)\s*\{([^{}]*)\}`)
	// "Answer: C", "Final answer: (C)", "ANSWER: $C$", "answer is: C", "Answer: option C".
	answerColonRe = regexp.MustCompile(`(?i)\banswer\s*(?:is)?\s*[:：]\s*(?:option|choice)?\s*[\$\(\[]*\s*([A-D])\b`)
	// "the answer is (C)", "answer is C", "the correct answer is option B".
	answerIsRe = regexp.MustCompile(`(?i)\banswer\s+is\s*(?:option|choice)?\s*[\$\(\[]*\s*([A-D])\b`)
	// \boxed{C}, \boxed{(C)}.
	boxedLetterRe = regexp.MustCompile(`(?i)\\boxed\s*\{\s*[\(\[]?\s*([A-D])\s*[\)\]]?\s*\}`)
	// "I choose (C)", "I would pick C", "I'll go with option C".
	chooseRe = regexp.MustCompile(`(?i)\bI\s*(?:would\s+|will\s+|'ll\s+)?(?:choose|pick|select|go\s+with)\s*(?:option|choice)?\s*[\$\(\[]*\s*([A-D])\b`)
	// "Option C is correct", "(C) is the correct answer", "choice C is right".
	isCorrectRe = regexp.MustCompile(`(?i)(?:\b(?:option|choice)\s*[\(\[]?|\()\s*([A-D])[\)\]]?\s+is\s+(?:the\s+)?(?:correct|right|best|answer)\b`)
	// A last line that is a letter and nothing else: "C", "(C)", "**C.**".
	lastLineRe = regexp.MustCompile(`(?:^|\n)[ \t>#]*[\(\[]?([A-D])[\)\]]?\.?[ \t]*$`)
	// What makes an answer statement two answers: "Answer: B or C", "B/C".
	eitherRe = regexp.MustCompile(`(?i)^\s*[\)\]]?\s*(?:or|and|/)\s*(?:option|choice)?\s*[\(\[]?\s*[A-D]\b`)
)

// ExtractChoice returns the letter (upper case) of the last answer statement
// in a response: "Answer: X" (the simple-evals form, also "Final answer:",
// "Answer: (X)", "Answer: $X$"), "answer is (X)", \boxed{X}, "I choose
// (X)", "Option X is correct", and a last line that is the letter alone
// ("(X)"), matched case-insensitively after markdown emphasis (** __ `) and
// LaTeX text wrappers (\text{X}, \textbf{X}, …) are removed, so "**Answer:
// C**" and "**Answer:** C" both give C. A lower-case letter counts only
// where it stands alone: in brackets, in \boxed{}, or with nothing but
// punctuation after it on its line ("the answer is a bit unclear" gives
// nothing). A last statement of two letters ("Answer: B or C") is no
// answer. Responses with a thinking block should go through StripThinking
// first.
func ExtractChoice(response string) (letter string, ok bool) {
	s := normalizeMarkdown(response)
	best, end := -1, 0
	for _, re := range []*regexp.Regexp{answerColonRe, answerIsRe, boxedLetterRe, chooseRe, isCorrectRe} {
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			ls, le := m[2], m[3]
			c := s[ls:le]
			if c != strings.ToUpper(c) && re != boxedLetterRe && !standsAlone(s, ls, le) {
				continue
			}
			if ls > best {
				best, end, letter = ls, le, strings.ToUpper(c)
			}
		}
	}
	if m := lastLineRe.FindStringSubmatchIndex(strings.TrimRightFunc(s, unicode.IsSpace)); m != nil && m[2] > best {
		best, end, letter = m[2], m[3], s[m[2]:m[3]]
	}
	if best < 0 || eitherRe.MatchString(s[end:]) {
		return "", false
	}
	return letter, true
}

func normalizeMarkdown(s string) string {
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	for range 3 { // nested wrappers: \textbf{\text{C}}
		s = texWrapRe.ReplaceAllString(s, "$1")
	}
	return s
}

// standsAlone reports whether s[ls:le] is bracketed, or followed by nothing
// but punctuation and spaces up to the end of its line.
func standsAlone(s string, ls, le int) bool {
	if ls > 0 && (s[ls-1] == '(' || s[ls-1] == '[') {
		return true
	}
	rest := s[le:]
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimFunc(rest, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) || r == '$'
	}) == ""
}

// StripThinking returns the part of a response after its reasoning: the text
// after the last "</think>". A response that opens "<think>" and never closes
// it (cut off while thinking) has no answer part and gives "". A response
// without think tags is returned as it is.
func StripThinking(response string) string {
	if i := strings.LastIndex(response, "</think>"); i >= 0 {
		return response[i+len("</think>"):]
	}
	if strings.Contains(response, "<think>") {
		return ""
	}
	return response
}
