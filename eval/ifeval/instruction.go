package ifeval

import (
	"fmt"
	"sort"
	"strings"

	"github.com/parleyhq/parley/internal/pystr"
)

// Instruction is one verifiable instruction with its kwargs bound.
type Instruction interface {
	// ID is the registry id, such as "keywords:existence".
	ID() string
	// Check reports whether response follows the instruction: the
	// reference's check_following, without evaluation_lib's extra rule that
	// an empty response fails (see CheckStrict).
	Check(response string) bool
}

// builder binds kwargs for one instruction id.
type builder func(a *args) (Instruction, error)

// registry is INSTRUCTION_DICT of instructions_registry.py.
var registry = map[string]builder{
	"keywords:existence":                            buildKeywordExistence,
	"keywords:frequency":                            buildKeywordFrequency,
	"keywords:forbidden_words":                      buildForbiddenWords,
	"keywords:letter_frequency":                     buildLetterFrequency,
	"language:response_language":                    buildResponseLanguage,
	"length_constraints:number_sentences":           buildNumberSentences,
	"length_constraints:number_paragraphs":          buildNumberParagraphs,
	"length_constraints:number_words":               buildNumberWords,
	"length_constraints:nth_paragraph_first_word":   buildNthParagraphFirstWord,
	"detectable_content:number_placeholders":        buildPlaceholders,
	"detectable_content:postscript":                 buildPostscript,
	"detectable_format:number_bullet_lists":         buildBulletLists,
	"detectable_format:constrained_response":        noArgs(constrainedResponse),
	"detectable_format:number_highlighted_sections": buildHighlights,
	"detectable_format:multiple_sections":           buildSections,
	"detectable_format:json_format":                 noArgs(jsonFormat),
	"detectable_format:title":                       noArgs(title),
	"combination:two_responses":                     noArgs(twoResponses),
	"combination:repeat_prompt":                     buildRepeatPrompt,
	"startend:end_checker":                          buildEndChecker,
	"change_case:capital_word_frequency":            buildCapitalWordFrequency,
	"change_case:english_capital":                   noArgs(englishCapital),
	"change_case:english_lowercase":                 noArgs(englishLowercase),
	"punctuation:no_comma":                          noArgs(noComma),
	"startend:quotation":                            noArgs(quotation),
}

// IDs returns the registered instruction ids, sorted.
func IDs() []string {
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Build returns the instruction id with kwargs bound, as the reference's
// build_description(**kwargs) does. Null kwargs are ignored. Where the
// reference would draw a missing or out-of-range kwarg at random, Build
// returns an error instead; errors name the instruction id and the kwarg.
//
// evaluation_lib also re-binds an instruction with the prompt when its args
// contain a "prompt" key; none of the 25 registered instructions has one, so
// the prompt plays no part here.
func Build(id string, kwargs map[string]any) (Instruction, error) {
	b, ok := registry[id]
	if !ok {
		return nil, fmt.Errorf("ifeval.Build: unknown instruction id %q", id)
	}
	a := newArgs(id, kwargs)
	ins, err := b(a)
	if err != nil {
		return nil, err
	}
	if err := a.done(); err != nil {
		return nil, err
	}
	return ins, nil
}

// CheckStrict is evaluation_lib's strict test of one instruction: the
// response must not be blank and must pass Check.
func CheckStrict(ins Instruction, response string) bool {
	return pystr.Strip(response) != "" && ins.Check(response)
}

// CheckLoose is evaluation_lib's loose test: CheckStrict passes for any of
// the response's LooseVariants.
func CheckLoose(ins Instruction, response string) bool {
	for _, r := range LooseVariants(response) {
		if CheckStrict(ins, r) {
			return true
		}
	}
	return false
}

// LooseVariants returns the eight responses the loose evaluation tries, in
// the reference's order: the response, with '*' removed, without its first
// line, without its last line, without both, and the last three with '*'
// removed. Lines are split on "\n"; the trimmed variants are stripped.
func LooseVariants(response string) []string {
	lines := strings.Split(response, "\n")
	join := func(ls []string) string { return pystr.Strip(strings.Join(ls, "\n")) }
	removeFirst := join(lines[1:])
	removeLast := join(lines[:len(lines)-1])
	removeBoth := ""
	if len(lines) > 2 {
		removeBoth = join(lines[1 : len(lines)-1])
	}
	noStars := func(s string) string { return strings.ReplaceAll(s, "*", "") }
	return []string{
		response,
		noStars(response),
		removeFirst,
		removeLast,
		removeBoth,
		noStars(removeFirst),
		noStars(removeLast),
		noStars(removeBoth),
	}
}

// checkFunc adapts a function to Instruction.
type checkFunc struct {
	id    string
	check func(string) bool
}

func (c checkFunc) ID() string                 { return c.id }
func (c checkFunc) Check(response string) bool { return c.check(response) }

// noArgs builds an instruction that takes no kwargs.
func noArgs(check func(string) bool) builder {
	return func(a *args) (Instruction, error) {
		return checkFunc{a.id, check}, nil
	}
}
