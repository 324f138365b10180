package dataset

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ScoreScaleKey is the parquet metadata key of a rollouts file's
// ScoreScale (as JSON), written when its rollouts were scored.
const ScoreScaleKey = "score_scale"

// ScoreScale says what scored a run's rollouts and in which range, so that
// exports, reports and charts label scores by the reward in use ("CA 1–5",
// "rule keyword_share 0–1") rather than assuming one.
type ScoreScale struct {
	// Name is what produced the scores: "CA" (the Collective Agency rubric
	// judge), "rule <kind>", a game's scorer.
	Name string `json:"name"`
	// Min and Max bound the scores; both 0 when the range is not known.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// IsZero reports whether s says nothing (no name, no range).
func (s ScoreScale) IsZero() bool { return s == ScoreScale{} }

// Label is the name and the range: "CA 1–5", "rule keyword_share 0–1",
// the name alone when the range is unknown, "score" for a zero scale.
func (s ScoreScale) Label() string {
	name := s.Name
	if name == "" {
		name = "score"
	}
	if s.Min == 0 && s.Max == 0 {
		return name
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return fmt.Sprintf("%s %s–%s", name, f(s.Min), f(s.Max))
}

// metadata is the scale as a rollouts file's key-value metadata (none for
// a zero scale).
func (s ScoreScale) metadata() map[string]string {
	if s.IsZero() {
		return nil
	}
	b, _ := json.Marshal(s)
	return map[string]string{ScoreScaleKey: string(b)}
}

// ReadScoreScale returns the scale recorded in a rollouts file's metadata;
// ok is false when the file records none (unscored rollouts, or files
// written before scales were recorded).
func ReadScoreScale(path string) (s ScoreScale, ok bool, err error) {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return s, false, fmt.Errorf("dataset.ReadScoreScale: %w", err)
	}
	defer f.Close()
	v, present := pf.Lookup(ScoreScaleKey)
	if !present {
		return s, false, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, false, fmt.Errorf("dataset.ReadScoreScale: %s: metadata %s: %w", path, ScoreScaleKey, err)
	}
	return s, true, nil
}
