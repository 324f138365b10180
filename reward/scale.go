package reward

import "github.com/parleyhq/parley/dataset"

// CAScale is the Collective Agency rubric's scale: integer scores 1 to 5.
var CAScale = dataset.ScoreScale{Name: "CA", Min: 1, Max: 5}

// RuleScale is the scale of a rule scorer of kind: its raw score in [0, 1]
// mapped onto [min, max] ([0, 1] when both are 0).
func RuleScale(kind string, min, max float64) dataset.ScoreScale {
	if min == 0 && max == 0 {
		max = 1
	}
	return dataset.ScoreScale{Name: "rule " + kind, Min: min, Max: max}
}

// Scaler is a judge that knows the scale of its scores.
type Scaler interface {
	Scale() dataset.ScoreScale
}

// ScaleOf returns j's scale, or a scale naming only j when j does not say.
func ScaleOf(j Judge) dataset.ScoreScale {
	if s, ok := j.(Scaler); ok {
		return s.Scale()
	}
	return dataset.ScoreScale{Name: j.Name()}
}

// Scale returns CAScale.
func (j *CAJudge) Scale() dataset.ScoreScale { return CAScale }

// Scale returns the rule's kind and range.
func (j *RuleJudge) Scale() dataset.ScoreScale {
	return RuleScale(j.label(), j.opts.Min, j.opts.Max)
}
