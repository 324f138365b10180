package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/pystr"
)

// Scorer names: how answers are read from responses. ScorerParley is
// parley's own (the default); the others are the references published
// numbers come from, so that a score can be reported comparably.
const (
	// ScorerParley: GPQA's last answer statement (ExtractChoice), AIME's last
	// \boxed{} read as an integer (ExtractAIMEAnswer), after the thinking
	// block (StripThinking: a response cut off while thinking has no answer).
	ScorerParley = "parley"
	// ScorerLMEvalStrict: lm-eval's GPQA strict-match filter (LMEvalStrict).
	ScorerLMEvalStrict = "lm-eval-strict"
	// ScorerLMEvalFlexible: lm-eval's GPQA flexible-extract filter
	// (LMEvalFlexible).
	ScorerLMEvalFlexible = "lm-eval-flexible"
	// ScorerSimpleEvals: OpenAI simple-evals' GPQA answer pattern
	// (SimpleEvalsChoice).
	ScorerSimpleEvals = "simple-evals"
	// ScorerMathVerify: Hugging Face's math-verify package on AIME
	// (MathVerify).
	ScorerMathVerify = "math-verify"
)

var (
	gpqaScorers = []string{ScorerParley, ScorerLMEvalStrict, ScorerLMEvalFlexible, ScorerSimpleEvals}
	aimeScorers = []string{ScorerParley, ScorerMathVerify}
)

// Scorers returns the scorers of a benchmark (GPQADiamond, or an AIME
// name), ScorerParley first; nil for another benchmark.
func Scorers(benchmark string) []string {
	switch {
	case benchmark == GPQADiamond || benchmark == "gpqa":
		return slices.Clone(gpqaScorers)
	case strings.HasPrefix(strings.ToLower(benchmark), "aime"):
		return slices.Clone(aimeScorers)
	}
	return nil
}

// CheckScorer returns the scorer a benchmark is scored with: scorer, or
// ScorerParley when it is empty. An unknown scorer, or one of another
// benchmark, is an error listing the valid ones.
func CheckScorer(benchmark, scorer string) (string, error) {
	if scorer == "" {
		return ScorerParley, nil
	}
	valid := Scorers(benchmark)
	if !slices.Contains(valid, scorer) {
		return "", fmt.Errorf("bench.CheckScorer: %s has no scorer %q (want one of %s)", benchmark, scorer, strings.Join(valid, ", "))
	}
	return scorer, nil
}

// DescribeScorer says in a line how a scorer reads answers, naming the
// reference and its version.
func DescribeScorer(scorer string) string {
	switch scorer {
	case ScorerParley:
		return "parley's own: the last answer statement (GPQA) or the last \\boxed{} integer (AIME) after the thinking block"
	case ScorerLMEvalStrict:
		return "lm-eval " + LMEvalVersion + "'s GPQA strict-match filter (\"The answer is (X)\")"
	case ScorerLMEvalFlexible:
		return "lm-eval " + LMEvalVersion + "'s GPQA flexible-extract filter (the last \"(X)\", then a choice's text, then \": X\")"
	case ScorerSimpleEvals:
		return "simple-evals' GPQA pattern (the first \"Answer: X\")"
	case ScorerMathVerify:
		return "Hugging Face math-verify (python -m " + MathVerifyModule + ")"
	}
	return scorer
}

// ReferenceText is the part of a response the reference scorers read: the
// text after the last "</think>", leading white space removed (lm-eval's
// think_end_token handling), or the whole response when it has none, so a
// response cut off inside its thinking block is read whole, thinking as
// answer — unlike ScorerParley, which gives it no answer (StripThinking).
func ReferenceText(response string) string {
	if i := strings.LastIndex(response, "</think>"); i >= 0 {
		return pystr.LStrip(response[i+len("</think>"):])
	}
	return response
}

// CutOff reports whether a response was cut off inside its thinking block:
// it opens "<think>" and never closes it. ScorerParley finds no answer in
// it; the references read it whole (ReferenceText).
func CutOff(response string) bool {
	return strings.Contains(response, "<think>") && !strings.Contains(response, "</think>")
}
