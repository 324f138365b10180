package ifeval

import (
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/eval/ifeval/internal/punkt"
	"github.com/parleyhq/parley/eval/ifeval/internal/wordtok"
	"github.com/parleyhq/parley/internal/pystr"
)

// The checks below follow instructions.py class by class; each comment names
// the reference class.

// compilePy compiles a pattern the reference passes to Python's re; with
// ignoreCase, as re.IGNORECASE folds case (pystr.IgnoreCase), not as Go's
// (?i) does.
func compilePy(a *args, name, pattern string, ignoreCase bool) (*regexp.Regexp, error) {
	p := pystr.TranslateRegex(pattern)
	if ignoreCase {
		folded, err := pystr.IgnoreCase(p)
		if err != nil {
			return nil, a.errf(name, "pattern %q: %v", pattern, err)
		}
		p = folded
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, a.errf(name, "pattern %q: %v", pattern, err)
	}
	return re, nil
}

// buildKeywordExistence is KeywordChecker: every keyword is found by
// re.search(keyword, response, re.IGNORECASE).
func buildKeywordExistence(a *args) (Instruction, error) {
	kws, err := a.reqStrs("keywords")
	if err != nil {
		return nil, err
	}
	sort.Strings(kws)
	res := make([]*regexp.Regexp, len(kws))
	for i, k := range kws {
		if res[i], err = compilePy(a, "keywords", k, true); err != nil {
			return nil, err
		}
	}
	return checkFunc{a.id, func(v string) bool {
		for _, re := range res {
			if !re.MatchString(v) {
				return false
			}
		}
		return true
	}}, nil
}

// buildKeywordFrequency is KeywordFrequencyChecker: the number of
// re.findall(keyword, response, re.IGNORECASE) matches against frequency.
func buildKeywordFrequency(a *args) (Instruction, error) {
	kw, err := a.reqStr("keyword")
	if err != nil {
		return nil, err
	}
	if kw == "" {
		return nil, a.errf("keyword", "empty (the reference would draw it at random)")
	}
	freq, err := a.reqInt("frequency", 0)
	if err != nil {
		return nil, err
	}
	rel, err := a.relation("relation")
	if err != nil {
		return nil, err
	}
	re, err := compilePy(a, "keyword", pystr.Strip(kw), true)
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		return compare(rel, len(re.FindAllStringIndex(v, -1)), freq)
	}}, nil
}

// buildForbiddenWords is ForbiddenWords: no word matches
// re.search(r"\b" + word + r"\b", response, re.IGNORECASE).
func buildForbiddenWords(a *args) (Instruction, error) {
	words, err := a.reqStrs("forbidden_words")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var uniq []string
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			uniq = append(uniq, w)
		}
	}
	sort.Strings(uniq)
	res := make([]*regexp.Regexp, len(uniq))
	for i, w := range uniq {
		if res[i], err = compilePy(a, "forbidden_words", "^(?:"+w+")", true); err != nil {
			return nil, err
		}
	}
	return checkFunc{a.id, func(v string) bool {
		for _, re := range res {
			if wordBounded(re, v) {
				return false
			}
		}
		return true
	}}, nil
}

// wordBounded reports whether anchored (a "^(?:word)" pattern) matches s at
// a position where Python's \b holds before the match and after it, as
// r"\b" + word + r"\b" would. For a literal word this is exact.
func wordBounded(anchored *regexp.Regexp, s string) bool {
	prevWord := false
	for i, r := range s {
		w := pystr.IsWord(r)
		if w != prevWord {
			if m := anchored.FindStringIndex(s[i:]); m != nil {
				end := i + m[1]
				if boundary(s, end) {
					return true
				}
			}
		}
		prevWord = w
	}
	return false
}

// boundary is Python's \b at byte offset i of s.
func boundary(s string, i int) bool {
	before, after := false, false
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		before = pystr.IsWord(r)
	}
	if i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		after = pystr.IsWord(r)
	}
	return before != after
}

// buildLetterFrequency is LetterFrequencyChecker: occurrences of letter in
// response.lower() against let_frequency. The current reference takes any
// one-character letter (earlier versions drew a random a–z letter for one
// outside a–z): "é" counts é, "1" counts 1.
func buildLetterFrequency(a *args) (Instruction, error) {
	letter, err := a.reqStr("letter")
	if err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(letter) != 1 {
		return nil, a.errf("letter", "%q is not one character (the reference would draw it at random)", letter)
	}
	letter = pystr.Lower(pystr.Strip(letter))
	freq, err := a.reqInt("let_frequency", 0)
	if err != nil {
		return nil, err
	}
	rel, err := a.relation("let_relation")
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		// collections.Counter(value.lower())[letter]: the counter's keys
		// are single characters, so a letter that is not one character
		// once stripped and lowered (" ", "İ" → "i̇") counts 0.
		n := 0
		if utf8.RuneCountInString(letter) == 1 {
			lr, _ := utf8.DecodeRuneInString(letter)
			for _, r := range pystr.Lower(v) {
				if r == lr {
					n++
				}
			}
		}
		return compare(rel, n, freq)
	}}, nil
}

// languageNames is LANGUAGE_CODES of instructions_util.py: the languages
// response_language accepts.
var languageNames = map[string]string{
	"en": "English", "es": "Spanish", "pt": "Portuguese", "ar": "Arabic",
	"hi": "Hindi", "fr": "French", "ru": "Russian", "de": "German",
	"ja": "Japanese", "it": "Italian", "bn": "Bengali", "uk": "Ukrainian",
	"th": "Thai", "ur": "Urdu", "ta": "Tamil", "te": "Telugu",
	"bg": "Bulgarian", "ko": "Korean", "pl": "Polish", "he": "Hebrew",
	"fa": "Persian", "vi": "Vietnamese", "ne": "Nepali", "sw": "Swahili",
	"kn": "Kannada", "mr": "Marathi", "gu": "Gujarati", "pa": "Punjabi",
	"ml": "Malayalam", "fi": "Finnish",
}

// buildResponseLanguage is ResponseLanguageChecker: the detected language
// equals language; undetectable text passes, as a langdetect error does.
func buildResponseLanguage(a *args) (Instruction, error) {
	lang, err := a.reqStr("language")
	if err != nil {
		return nil, err
	}
	if _, ok := languageNames[lang]; !ok {
		return nil, a.errf("language", "%q is not one of the reference's language codes", lang)
	}
	return checkFunc{a.id, func(v string) bool {
		got, ok := detectLanguage(v)
		return !ok || got == lang
	}}, nil
}

// buildNumberSentences is NumberOfSentences: the Punkt sentence count.
func buildNumberSentences(a *args) (Instruction, error) {
	n, err := a.reqInt("num_sentences", 0)
	if err != nil {
		return nil, err
	}
	rel, err := a.relation("relation")
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		return compare(rel, punkt.English().Count(v), n)
	}}, nil
}

var reParagraphDivider = regexp.MustCompile(pystr.SpaceClass + `?\*\*\*` + pystr.SpaceClass + `?`)

// buildNumberParagraphs is ParagraphChecker: paragraphs split by
// re.split(r"\s?\*\*\*\s?"); a blank one is allowed only first or last.
func buildNumberParagraphs(a *args) (Instruction, error) {
	want, err := a.reqInt("num_paragraphs", 0)
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		paras := pySplit(reParagraphDivider, v)
		n := len(paras)
		for i, p := range paras {
			if pystr.Strip(p) == "" {
				if i == 0 || i == len(paras)-1 {
					n--
				} else {
					return false
				}
			}
		}
		return n == want
	}}, nil
}

// pySplit is re.split(pattern, s) for a pattern without groups that cannot
// match the empty string.
func pySplit(re *regexp.Regexp, s string) []string {
	var out []string
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		out = append(out, s[last:m[0]])
		last = m[1]
	}
	return append(out, s[last:])
}

// countWords is instructions_util.count_words: nltk's RegexpTokenizer(r"\w+"),
// which NLTK 3.10 compiles with the regex module (see pystr.IsRegexWord).
func countWords(s string) int {
	n := 0
	in := false
	for _, r := range s {
		w := pystr.IsRegexWord(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// buildNumberWords is NumberOfWords.
func buildNumberWords(a *args) (Instruction, error) {
	n, err := a.reqInt("num_words", 0)
	if err != nil {
		return nil, err
	}
	rel, err := a.relation("relation")
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		return compare(rel, countWords(v), n)
	}}, nil
}

// buildNthParagraphFirstWord is ParagraphFirstWordCheck: paragraphs split on
// "\n\n"; their count, and the first word of paragraph nth_paragraph.
func buildNthParagraphFirstWord(a *args) (Instruction, error) {
	num, err := a.reqInt("num_paragraphs", 0)
	if err != nil {
		return nil, err
	}
	var nth int
	if num == 0 {
		// The reference draws nth_paragraph from randint(1, num+1) when it
		// is absent, below 1 or above num: for num 0 that is always 1.
		if _, _, err := a.optInt("nth_paragraph"); err != nil {
			return nil, err
		}
		nth = 1
	} else if nth, err = a.reqInt("nth_paragraph", 1); err != nil {
		return nil, err
	}
	if nth > num && num > 0 {
		return nil, a.errf("nth_paragraph", "%d exceeds num_paragraphs %d (the reference would draw it at random)", nth, num)
	}
	first, err := a.reqStr("first_word")
	if err != nil {
		return nil, err
	}
	first = pystr.Lower(first)
	return checkFunc{a.id, func(v string) bool {
		paras := strings.Split(v, "\n\n")
		n := len(paras)
		for _, p := range paras {
			if pystr.Strip(p) == "" {
				n--
			}
		}
		if nth > n {
			return false
		}
		p := pystr.Strip(paras[nth-1])
		if p == "" {
			return false
		}
		word := pystr.Strip(pystr.Fields(p)[0])
		word = strings.TrimLeft(word, "'")
		word = strings.TrimLeft(word, `"`)
		var got strings.Builder
		for _, r := range word {
			if strings.ContainsRune(`.,?!'"`, r) {
				break
			}
			got.WriteString(pystr.Lower(string(r)))
		}
		return n == num && got.String() == first
	}}, nil
}

var rePlaceholder = regexp.MustCompile(`\[.*?\]`)

// buildPlaceholders is PlaceholderChecker: at least num_placeholders
// matches of \[.*?\].
func buildPlaceholders(a *args) (Instruction, error) {
	n, err := a.reqInt("num_placeholders", 0)
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		return len(rePlaceholder.FindAllStringIndex(v, -1)) >= n
	}}, nil
}

// buildPostscript is PostscriptChecker: a line of the lower-cased response
// contains the marker (P.S. and P.P.S have tolerant patterns).
func buildPostscript(a *args) (Instruction, error) {
	marker, err := a.reqStr("postscript_marker")
	if err != nil {
		return nil, err
	}
	marker = pystr.Strip(marker)
	var pattern string
	switch marker {
	case "P.P.S":
		pattern = `\s*p\.\s?p\.\s?s.*$`
	case "P.S.":
		pattern = `\s*p\.\s?s\..*$`
	default:
		pattern = `\s*` + pystr.Lower(marker) + `.*$`
	}
	re, err := compilePy(a, "postscript_marker", "(?m)"+pattern, false)
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		return re.MatchString(pystr.Lower(v))
	}}, nil
}

var (
	reBulletStar = regexp.MustCompile(`(?m)^` + pystr.SpaceClass + `*\*[^*].*$`)
	reBulletDash = regexp.MustCompile(`(?m)^` + pystr.SpaceClass + `*-.*$`)
)

// buildBulletLists is BulletListChecker: exactly num_bullets lines that
// start with "*" or "-".
func buildBulletLists(a *args) (Instruction, error) {
	n, err := a.reqInt("num_bullets", 0)
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		got := len(reBulletStar.FindAllStringIndex(v, -1)) + len(reBulletDash.FindAllStringIndex(v, -1))
		return got == n
	}}, nil
}

// constrainedResponse is ConstrainedResponseChecker.
func constrainedResponse(v string) bool {
	v = pystr.Strip(v)
	for _, opt := range []string{"My answer is yes.", "My answer is no.", "My answer is maybe."} {
		if strings.Contains(v, opt) {
			return true
		}
	}
	return false
}

var (
	reHighlight       = regexp.MustCompile(`\*[^\n*]*\*`)
	reDoubleHighlight = regexp.MustCompile(`\*\*[^\n*]*\*\*`)
)

// buildHighlights is HighlightSectionChecker: non-blank *x* and **x** spans.
func buildHighlights(a *args) (Instruction, error) {
	n, err := a.reqInt("num_highlights", 0)
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		got := 0
		for _, h := range reHighlight.FindAllString(v, -1) {
			if pystr.Strip(strings.Trim(h, "*")) != "" {
				got++
			}
		}
		for _, h := range reDoubleHighlight.FindAllString(v, -1) {
			if pystr.Strip(strings.TrimSuffix(strings.TrimPrefix(h, "**"), "**")) != "" {
				got++
			}
		}
		return got >= n
	}}, nil
}

// buildSections is SectionChecker: len(re.split(r"\s?" + spliter +
// r"\s?\d+\s?", response)) - 1 against num_sections.
func buildSections(a *args) (Instruction, error) {
	spliter, err := a.reqStr("section_spliter")
	if err != nil {
		return nil, err
	}
	spliter = pystr.Strip(spliter)
	n, err := a.reqInt("num_sections", 0)
	if err != nil {
		return nil, err
	}
	re, err := compilePy(a, "section_spliter", `\s?`+spliter+`\s?\d+\s?`, false)
	if err != nil {
		return nil, err
	}
	// re.split also returns the text of each capturing group.
	perMatch := 1 + re.NumSubexp()
	return checkFunc{a.id, func(v string) bool {
		return len(re.FindAllStringIndex(v, -1))*perMatch >= n
	}}, nil
}

// jsonFormat is JsonFormat: the response, stripped of markdown code fences,
// parses with Python's json.loads.
func jsonFormat(v string) bool {
	v = pystr.Strip(v)
	for _, p := range []string{"```json", "```Json", "```JSON", "```"} {
		v = strings.TrimPrefix(v, p)
	}
	v = pystr.Strip(strings.TrimSuffix(v, "```"))
	return pyJSONValid(v)
}

var reTitle = regexp.MustCompile(`<<[^\n]+>>`)

// title is TitleChecker: a non-blank <<title>> on one line.
func title(v string) bool {
	for _, t := range reTitle.FindAllString(v, -1) {
		if pystr.Strip(strings.TrimRight(strings.TrimLeft(t, "<"), ">")) != "" {
			return true
		}
	}
	return false
}

// twoResponses is TwoResponsesChecker: two different non-blank parts
// separated by "******", blanks allowed only first or last.
func twoResponses(v string) bool {
	var valid []string
	parts := strings.Split(v, "******")
	for i, p := range parts {
		if pystr.Strip(p) == "" {
			if i != 0 && i != len(parts)-1 {
				return false
			}
		} else {
			valid = append(valid, p)
		}
	}
	return len(valid) == 2 && pystr.Strip(valid[0]) != pystr.Strip(valid[1])
}

// buildRepeatPrompt is RepeatPromptThenAnswer: the response starts with the
// prompt to repeat, ignoring case and surrounding whitespace.
func buildRepeatPrompt(a *args) (Instruction, error) {
	p, err := a.reqStr("prompt_to_repeat")
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, a.errf("prompt_to_repeat", "must be set")
	}
	want := pystr.Lower(pystr.Strip(p))
	return checkFunc{a.id, func(v string) bool {
		return strings.HasPrefix(pystr.Lower(pystr.Strip(v)), want)
	}}, nil
}

// buildEndChecker is EndChecker: the response, stripped of whitespace and
// double quotes, ends with end_phrase, ignoring case.
func buildEndChecker(a *args) (Instruction, error) {
	p, err := a.reqStr("end_phrase")
	if err != nil {
		return nil, err
	}
	want := pystr.Lower(pystr.Strip(p))
	return checkFunc{a.id, func(v string) bool {
		v = pystr.Lower(strings.Trim(pystr.Strip(v), `"`))
		return strings.HasSuffix(v, want)
	}}, nil
}

// buildCapitalWordFrequency is CapitalWordFrequencyChecker: the number of
// nltk.word_tokenize tokens for which str.isupper() holds.
func buildCapitalWordFrequency(a *args) (Instruction, error) {
	n, ok, err := a.optInt("capital_frequency")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, a.errf("capital_frequency", "missing (the reference would draw it at random)")
	}
	rel, err := a.relation("capital_relation")
	if err != nil {
		return nil, err
	}
	return checkFunc{a.id, func(v string) bool {
		got := 0
		for _, w := range wordtok.WordTokenize(v) {
			if pystr.IsUpper(w) {
				got++
			}
		}
		return compare(rel, got, n)
	}}, nil
}

// englishCapital is CapitalLettersEnglishChecker.
func englishCapital(v string) bool {
	if !pystr.IsUpper(v) {
		return false
	}
	got, ok := detectLanguage(v)
	return !ok || got == "en"
}

// englishLowercase is LowercaseLettersEnglishChecker.
func englishLowercase(v string) bool {
	if !pystr.IsLower(v) {
		return false
	}
	got, ok := detectLanguage(v)
	return !ok || got == "en"
}

// noComma is CommaChecker.
func noComma(v string) bool { return !strings.Contains(v, ",") }

// quotation is QuotationChecker: the stripped response starts and ends
// with a double quote.
func quotation(v string) bool {
	v = pystr.Strip(v)
	return len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"'
}
