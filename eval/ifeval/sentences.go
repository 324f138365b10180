package ifeval

import (
	"regexp"
	"strings"

	"github.com/parleyhq/parley/internal/pystr"
)

// splitIntoSentences is instructions_util.split_into_sentences, the
// reference's regex sentence splitter. No registered instruction uses it
// (only the unregistered keywords:key_sentences did); it is kept, with its
// reference tests, for checks that may need it.
func splitIntoSentences(text string) []string {
	const (
		alphabets = `([A-Za-z])`
		prefixes  = `(Mr|St|Mrs|Ms|Dr)[.]`
		suffixes  = `(Inc|Ltd|Jr|Sr|Co)`
		starters  = `(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|This\s|Wherever)`
		acronyms  = `([A-Z][.][A-Z][.](?:[A-Z][.])?)`
		websites  = `[.](com|net|org|io|gov|edu|me)`
		digits    = `([0-9])`
	)
	sub := func(text, pat, repl string) string {
		return regexp.MustCompile(pystr.TranslateRegex(pat)).ReplaceAllString(text, repl)
	}
	text = " " + text + "  "
	text = strings.ReplaceAll(text, "\n", " ")
	text = sub(text, prefixes, "${1}<prd>")
	text = sub(text, websites, "<prd>${1}")
	text = sub(text, digits+`[.]`+digits, "${1}<prd>${2}")
	text = regexp.MustCompile(`\.{2,}`).ReplaceAllStringFunc(text, func(m string) string {
		return strings.Repeat("<prd>", len(m)) + "<stop>"
	})
	text = strings.ReplaceAll(text, "Ph.D.", "Ph<prd>D<prd>")
	text = sub(text, `\s`+alphabets+`[.] `, " ${1}<prd> ")
	text = sub(text, acronyms+" "+starters, "${1}<stop> ${2}")
	text = sub(text, alphabets+`[.]`+alphabets+`[.]`+alphabets+`[.]`, "${1}<prd>${2}<prd>${3}<prd>")
	text = sub(text, alphabets+`[.]`+alphabets+`[.]`, "${1}<prd>${2}<prd>")
	text = sub(text, " "+suffixes+`[.] `+starters, " ${1}<stop> ${2}")
	text = sub(text, " "+suffixes+`[.]`, " ${1}<prd>")
	text = sub(text, " "+alphabets+`[.]`, " ${1}<prd>")
	text = strings.ReplaceAll(text, ".”", "”.")
	text = strings.ReplaceAll(text, `."`, `".`)
	text = strings.ReplaceAll(text, `!"`, `"!`)
	text = strings.ReplaceAll(text, `?"`, `"?`)
	text = strings.ReplaceAll(text, ".", ".<stop>")
	text = strings.ReplaceAll(text, "?", "?<stop>")
	text = strings.ReplaceAll(text, "!", "!<stop>")
	text = strings.ReplaceAll(text, "<prd>", ".")
	sentences := strings.Split(text, "<stop>")
	for i, s := range sentences {
		sentences[i] = pystr.Strip(s)
	}
	if len(sentences) > 0 && sentences[len(sentences)-1] == "" {
		sentences = sentences[:len(sentences)-1]
	}
	return sentences
}
