package multiparty

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
)

// Reward modes (Config.Reward): what an honest party's reward is made of.
const (
	// RewardOwn pays each honest party its own utility above BATNA:
	// seed 002's incentive, the default.
	RewardOwn = "own"
	// RewardHonestMean pays each honest party the honest parties' mean
	// utility above BATNA: a shared, collective reward, for a party paid
	// for deals good for every honest party.
	RewardHonestMean = "honest_mean"
)

// Scorer is the game's programmatic scorer (judge.kind: game): each honest
// party earns its utility above BATNA when a deal is reached (negative
// when the deal is below its BATNA) and 0 without one — or, under
// RewardHonestMean, the honest parties' mean of it —, less the invalid
// penalty when it voted for a deal below its BATNA. The adversary earns
// nothing: it is not scored, so it never gets an advantage.
type Scorer struct {
	penalty float64
	mode    string
}

var _ reward.Judge = (*Scorer)(nil)

// NewScorer returns the scorer with the invalid-agreement penalty and the
// reward mode (RewardOwn or RewardHonestMean; "" is RewardOwn).
func NewScorer(invalidPenalty float64, mode string) *Scorer {
	return &Scorer{penalty: invalidPenalty, mode: mode}
}

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
	var surplus float64
	for role := range o.Kinds {
		if o.Honest(role) {
			rr := o.Result(role)
			res.Roles[role] = float64(rr.Surplus)
			surplus += float64(rr.Surplus)
		}
	}
	if len(res.Roles) == 0 {
		return reward.Result{}, fmt.Errorf("multiparty.Scorer: rollout %s has no honest party", r.RolloutID)
	}
	mean := surplus / float64(len(res.Roles))
	var sum float64
	for role, v := range res.Roles {
		if s.mode == RewardHonestMean {
			v = mean
		}
		if o.Result(role).Invalid {
			v -= s.penalty
		}
		res.Roles[role] = v
		sum += v
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
