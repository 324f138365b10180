package bench

import "regexp"

// simple-evals' ANSWER_PATTERN_MULTICHOICE (openai/simple-evals common.py).
var simpleEvalsRe = regexp.MustCompile(`(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?`)

// SimpleEvalsChoice is the answer OpenAI's simple-evals reads from a GPQA
// response (gpqa_eval.py): the first match of ANSWER_PATTERN_MULTICHOICE,
// `(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?`, as written. It is scored right
// only when it equals the correct letter exactly, so a lower-case "answer:
// c" is read ("c") but wrong.
func SimpleEvalsChoice(response string) (letter string, ok bool) {
	m := simpleEvalsRe.FindStringSubmatch(response)
	if m == nil {
		return "", false
	}
	return m[1], true
}
