package grpo

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/parleyhq/parley/dataset"
)

// Advantage modes.
const (
	// ModeGroup is GRPO's group-relative advantage (r − mean)/(std + ε).
	ModeGroup = "group"
	// ModeGroupMean is Dr. GRPO's advantage r − mean, without the std
	// scaling (which favours easy and hard questions over uncertain ones).
	ModeGroupMean = "group_mean"
	// ModeRoleBaseline is r − b(role), b an exponential moving average of the
	// role's rewards carried across steps: for zero-sum games, where the
	// group mean says nothing.
	ModeRoleBaseline = "role_baseline"
)

// Defaults of AdvantageOptions.
const (
	DefaultEpsilon          = 1e-6
	DefaultBaselineMomentum = 0.9
)

// ZeroVarianceTolerance is the reward spread (max − min) at or below which a
// group counts as zero-variance.
const ZeroVarianceTolerance = 1e-9

// AdvantageOptions configures ComputeAdvantages.
type AdvantageOptions struct {
	// Mode is ModeGroup, ModeGroupMean or ModeRoleBaseline.
	Mode string

	// Epsilon is added to the std in ModeGroup; 0 means DefaultEpsilon.
	Epsilon float64

	// StdDDOF is the std's delta degrees of freedom in ModeGroup: 0 (the
	// default) divides by n, the population std; 1 divides by n − 1, the
	// sample std that TRL uses.
	//
	// We pick the population std. The group is the whole population the
	// baseline is taken over, not a sample of a larger one, and with it the
	// advantages of a group always have mean 0 and mean square 1
	// (up to ε), whatever the group size. Group sizes vary here, because
	// failed and unjudged rollouts leave their group: with the sample std a
	// group of 2 would get advantages ±0.71 and a group of 16 ±0.97 for the
	// same spread of rewards, a weight that depends on how many rollouts
	// failed. The population std is also defined for a group of one.
	// TRL (trl/trainer/grpo_trainer.py, checked at commit f2cd577, scale_rewards
	// "group") uses the sample std through its nanstd (Bessel's correction,
	// like torch.std) and ε = 1e-4; set StdDDOF 1 and Epsilon 1e-4 to match it.
	StdDDOF int

	// KeepZeroVariance keeps groups whose rewards are all equal (their
	// advantages are 0, so they add only KL and token-count effects); by
	// default they are dropped and counted. It has no effect in
	// ModeRoleBaseline, which never drops a group: r − b is not 0 there.
	KeepZeroVariance bool

	// BaselineMomentum is the EMA momentum m of ModeRoleBaseline:
	// b ← m·b + (1 − m)·(mean reward of the role this step). 0 means
	// DefaultBaselineMomentum; it must lie in [0, 1).
	BaselineMomentum float64

	// RoleKey names the baseline a rollout is compared with in
	// ModeRoleBaseline. Nil means DefaultRoleKey.
	RoleKey func(dataset.Rollout) string
}

// DefaultRoleKey is the baseline key of a rollout in ModeRoleBaseline: the
// distinct roles of its sequences, sorted and joined by "+" (so "holder",
// "requester", or "A+B" for a self-play rollout that trains both sides on one
// reward), or "_" when it has none. A zero-sum game that trains both sides
// records one rollout per side, each with that side's reward and sequences,
// sharing the GroupID.
func DefaultRoleKey(r dataset.Rollout) string {
	var roles []string
	for _, s := range r.Sequences {
		if !slices.Contains(roles, s.Role) {
			roles = append(roles, s.Role)
		}
	}
	if len(roles) == 0 {
		return "_"
	}
	slices.Sort(roles)
	return strings.Join(roles, "+")
}

// AdvantageStats describes one step's advantage computation.
type AdvantageStats struct {
	// Groups is the number of distinct GroupIDs in the input.
	Groups int `json:"groups"`
	// KeptGroups is the number of groups whose rollouts got an advantage.
	KeptGroups int `json:"kept_groups"`
	// Kept is the number of rollouts that got an advantage.
	Kept int `json:"kept"`
	// Scored is the number of rollouts with a usable reward.
	Scored int `json:"scored"`
	// Excluded counts failed, unjudged and non-finite-reward rollouts: they
	// are left out of their group's statistics, never scored 0.
	Excluded int `json:"excluded"`
	// EmptyGroups counts groups with no scored rollout left.
	EmptyGroups int `json:"empty_groups"`
	// ZeroVarianceGroups counts groups whose scored rewards are all equal
	// (within ZeroVarianceTolerance), groups of one included.
	ZeroVarianceGroups int `json:"zero_variance_groups"`
	// DroppedZeroVariance counts the zero-variance groups dropped.
	DroppedZeroVariance int `json:"dropped_zero_variance"`
	// RewardMean and RewardStd (population) are over scored rollouts.
	RewardMean float64 `json:"reward_mean"`
	RewardStd  float64 `json:"reward_std"`
	// ScoreMin, ScoreMean and ScoreMax are the min, mean and max of each
	// group's scored rewards, averaged over the groups that have any (the
	// training curves of seed 000, figure 2).
	ScoreMin  float64 `json:"score_min"`
	ScoreMean float64 `json:"score_mean"`
	ScoreMax  float64 `json:"score_max"`
}

// Scored reports whether a rollout's reward may enter an advantage: it did
// not fail, it was judged (programmatic scorers set Judged too), and its
// reward is finite.
func Scored(r dataset.Rollout) bool {
	return !r.Failed && r.Judged && !math.IsNaN(float64(r.Reward)) && !math.IsInf(float64(r.Reward), 0)
}

func (o AdvantageOptions) withDefaults() (AdvantageOptions, error) {
	switch o.Mode {
	case ModeGroup, ModeGroupMean, ModeRoleBaseline:
	case "":
		return o, fmt.Errorf("advantage mode is empty, want %q, %q or %q", ModeGroup, ModeGroupMean, ModeRoleBaseline)
	default:
		return o, fmt.Errorf("unknown advantage mode %q, want %q, %q or %q", o.Mode, ModeGroup, ModeGroupMean, ModeRoleBaseline)
	}
	if o.Epsilon == 0 {
		o.Epsilon = DefaultEpsilon
	}
	if o.Epsilon < 0 || math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) {
		return o, fmt.Errorf("epsilon %v must be a positive number", o.Epsilon)
	}
	if o.StdDDOF != 0 && o.StdDDOF != 1 {
		return o, fmt.Errorf("std_ddof %d must be 0 or 1", o.StdDDOF)
	}
	if o.BaselineMomentum == 0 {
		o.BaselineMomentum = DefaultBaselineMomentum
	}
	if !(o.BaselineMomentum >= 0 && o.BaselineMomentum < 1) {
		return o, fmt.Errorf("baseline momentum %v must lie in [0, 1)", o.BaselineMomentum)
	}
	if o.RoleKey == nil {
		o.RoleKey = DefaultRoleKey
	}
	return o, nil
}

// ComputeAdvantages fills the Advantage of every rollout in place and returns
// copies of the kept rollouts (input order), the ones BuildBatch trains on.
//
// Rollouts are grouped by GroupID (the G rollouts of one prompt row). A
// rollout that is not Scored is excluded from its group and counted. In
// ModeGroup and ModeGroupMean a group whose scored rewards are all equal
// (a group of one included) has advantage 0 and is dropped unless
// opts.KeepZeroVariance. Excluded and dropped rollouts get Advantage 0.
//
// ModeRoleBaseline needs baseline, the state carried across steps (persist it
// in state.json); it reads the baselines as they were before this step, then
// updates them with this step's mean reward per role. A role seen for the
// first time starts from this step's mean. ComputeAdvantages does not touch
// baseline in other modes, and baseline may be nil there.
func ComputeAdvantages(rollouts []dataset.Rollout, opts AdvantageOptions, baseline *RoleBaseline) ([]dataset.Rollout, AdvantageStats, error) {
	var st AdvantageStats
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, st, fmt.Errorf("grpo.ComputeAdvantages: %w", err)
	}
	if opts.Mode == ModeRoleBaseline && baseline == nil {
		return nil, st, fmt.Errorf("grpo.ComputeAdvantages: mode %q needs a RoleBaseline", ModeRoleBaseline)
	}

	type group struct{ scored []int }
	var order []string
	groups := map[string]*group{}
	for i := range rollouts {
		r := &rollouts[i]
		if r.GroupID == "" {
			return nil, st, fmt.Errorf("grpo.ComputeAdvantages: rollout %q has no group_id", r.RolloutID)
		}
		g, ok := groups[r.GroupID]
		if !ok {
			g = &group{}
			groups[r.GroupID] = g
			order = append(order, r.GroupID)
		}
		r.Advantage = 0
		if !Scored(*r) {
			st.Excluded++
			continue
		}
		g.scored = append(g.scored, i)
	}
	st.Groups = len(order)

	kept := make([]bool, len(rollouts))
	var all []float64
	var scoreGroups int
	for _, id := range order {
		g := groups[id]
		if len(g.scored) == 0 {
			st.EmptyGroups++
			continue
		}
		rs := make([]float64, len(g.scored))
		for k, i := range g.scored {
			rs[k] = float64(rollouts[i].Reward)
		}
		all = append(all, rs...)
		mean, std := meanStd(rs, 0)
		lo, hi := slices.Min(rs), slices.Max(rs)
		st.ScoreMin += lo
		st.ScoreMean += mean
		st.ScoreMax += hi
		scoreGroups++

		zeroVar := hi-lo <= ZeroVarianceTolerance
		if zeroVar {
			st.ZeroVarianceGroups++
		}
		if opts.Mode == ModeRoleBaseline {
			for _, i := range g.scored {
				kept[i] = true
			}
			st.KeptGroups++
			continue
		}
		if zeroVar && !opts.KeepZeroVariance {
			st.DroppedZeroVariance++
			continue
		}
		if opts.StdDDOF == 1 && !zeroVar {
			_, std = meanStd(rs, 1)
		}
		for k, i := range g.scored {
			kept[i] = true
			var a float64
			switch {
			case zeroVar:
				// 0 exactly, not a rounding residue scaled by 1/ε.
			case opts.Mode == ModeGroup:
				a = (rs[k] - mean) / (std + opts.Epsilon)
			default:
				a = rs[k] - mean
			}
			rollouts[i].Advantage = float32(a)
		}
		st.KeptGroups++
	}
	st.Scored = len(all)
	if len(all) > 0 {
		st.RewardMean, st.RewardStd = meanStd(all, 0)
	}
	if scoreGroups > 0 {
		n := float64(scoreGroups)
		st.ScoreMin /= n
		st.ScoreMean /= n
		st.ScoreMax /= n
	}

	if opts.Mode == ModeRoleBaseline {
		roleBaselineAdvantages(rollouts, kept, opts, baseline)
	}

	var out []dataset.Rollout
	for i, k := range kept {
		if k {
			out = append(out, rollouts[i])
		}
	}
	st.Kept = len(out)
	return out, st, nil
}

// roleBaselineAdvantages sets r − b(role) on the kept rollouts, b read
// before this step's update, then folds this step's role means into baseline.
func roleBaselineAdvantages(rollouts []dataset.Rollout, kept []bool, opts AdvantageOptions, baseline *RoleBaseline) {
	type acc struct {
		sum float64
		n   int
	}
	keys := make([]string, len(rollouts))
	var roles []string
	sums := map[string]*acc{}
	for i, k := range kept {
		if !k {
			continue
		}
		key := opts.RoleKey(rollouts[i])
		keys[i] = key
		a, ok := sums[key]
		if !ok {
			a = &acc{}
			sums[key] = a
			roles = append(roles, key)
		}
		a.sum += float64(rollouts[i].Reward)
		a.n++
	}
	means := make(map[string]float64, len(roles))
	before := make(map[string]float64, len(roles))
	for _, key := range roles {
		means[key] = sums[key].sum / float64(sums[key].n)
		b, ok := baseline.Value(key)
		if !ok {
			b = means[key]
		}
		before[key] = b
	}
	for i, k := range kept {
		if k {
			rollouts[i].Advantage = float32(float64(rollouts[i].Reward) - before[keys[i]])
		}
	}
	for _, key := range roles {
		baseline.Update(key, means[key], opts.BaselineMomentum)
	}
}

// meanStd returns the mean and the standard deviation with ddof delta degrees
// of freedom (0: population, 1: sample); std is 0 when len(xs) <= ddof.
func meanStd(xs []float64, ddof int) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) <= ddof {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(xs)-ddof))
}
