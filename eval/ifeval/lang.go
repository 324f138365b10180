package ifeval

import "github.com/parleyhq/parley/eval/ifeval/internal/langdetect"

// detectLanguage is langdetect.detect as the reference calls it (seed 0).
// ok is false where langdetect raises LangDetectException (no n-gram of the
// text is in any profile), which the reference counts as following the
// instruction.
func detectLanguage(text string) (code string, ok bool) {
	code, err := langdetect.Detect(text)
	if err != nil {
		return "", false
	}
	return code, true
}
