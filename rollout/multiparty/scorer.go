package multiparty

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
)

// Scorer is the game's programmatic scorer (judge.kind: game): each honest
// party earns its utility above BATNA when a deal is reached (negative
// when the deal is below its BATNA) and 0 without one, less the invalid
// penalty when it voted for a deal below its BATNA. The adversary earns
// nothing: it is not scored, so it never gets an advantage.
type Scorer struct{ penalty float64 }

var _ reward.Judge = (*Scorer)(nil)

// NewScorer returns the scorer with the invalid-agreement penalty.
func NewScorer(invalidPenalty float64) *Scorer { return &Scorer{penalty: invalidPenalty} }

// Name implements reward.Judge.
func (s *Scorer) Name() string { return "multiparty-utility" }

// Judge implements reward.Judge: per-role rewards, and as the rollout's
// score their mean over the honest parties.
func (s *Scorer) Judge(_ context.Context, r *dataset.Rollout) (reward.Result, error) {
	o, err := ParseOutcome(r)
	if err != nil {
		return reward.Result{}, fmt.Errorf("multiparty.Scorer: %w", err)
	}
	res := reward.Result{Roles: map[string]float64{}, Model: s.Name()}
	var sum float64
	for role := range o.Kinds {
		if !o.Honest(role) {
			continue
		}
		rr := o.Result(role)
		v := float64(rr.Surplus)
		if rr.Invalid {
			v -= s.penalty
		}
		res.Roles[role] = v
		sum += v
	}
	if len(res.Roles) == 0 {
		return reward.Result{}, fmt.Errorf("multiparty.Scorer: rollout %s has no honest party", r.RolloutID)
	}
	res.Score = sum / float64(len(res.Roles))
	if o.Deal {
		res.Rationale = fmt.Sprintf("deal %s in round %d; honest surplus %v", o.Label, o.DealRound, res.Roles)
	} else {
		res.Rationale = fmt.Sprintf("no deal in %d rounds", len(o.Rounds))
	}
	if len(o.Invalid) > 0 {
		res.Rationale += fmt.Sprintf("; invalid agreement by %v (penalty %g)", o.Invalid, s.penalty)
	}
	return res, nil
}
