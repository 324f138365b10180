package grpo

import (
	"fmt"
	"math"
	"slices"

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

// AdvantageModes lists the advantage modes, for validation and help.
var AdvantageModes = []string{ModeGroup, ModeGroupMean, ModeRoleBaseline}

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
	// Roles holds the statistics of each trained role, by role name.
	Roles map[string]RoleStats `json:"roles,omitempty"`
}

// RoleStats describes one trained role's rewards in a step.
type RoleStats struct {
	// Scored counts the role's scored outcomes; Kept those that got an
	// advantage.
	Scored int `json:"scored"`
	Kept   int `json:"kept"`
	// RewardMean and RewardStd (population) are over the scored outcomes.
	RewardMean float64 `json:"reward_mean"`
	RewardStd  float64 `json:"reward_std"`
}

// Scored reports whether a role's reward in rollout r may enter an
// advantage: the rollout did not fail, the role is trained, it was scored
// (its judge or scorer answered) and its reward is finite.
func Scored(r *dataset.Rollout, ro *dataset.RoleOutcome) bool {
	return !r.Failed && ro.Trained && ro.Scored && !math.IsNaN(float64(ro.Reward)) && !math.IsInf(float64(ro.Reward), 0)
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
	return o, nil
}

// ComputeAdvantages fills the Advantage of every role of every rollout in
// place and returns copies of the kept rollouts (input order), the ones
// BuildBatch trains on.
//
// Advantages are computed per (group, role): a group is the G rollouts of
// one prompt row (GroupID), and each trained role is compared only with the
// same role in its group. For games whose roles share one reward (the
// deliberation game: A, B and the final completion all get the judge's
// score) this is the group-relative advantage of the rollout; for a
// zero-sum game (holder 1 − share, requester share) each side is compared
// only with the same side, so the two advantages are exact opposites; a
// role that is not trained (a frozen opponent, a covert adversary) gets no
// advantage and no rows. A role that is not Scored is excluded from its
// (group, role) and gets Advantage 0; a rollout with no scored trained role
// counts as excluded.
//
// In ModeGroup and ModeGroupMean a (group, role) whose scored rewards are
// all equal (a single rollout included) has advantage 0 and is dropped
// unless opts.KeepZeroVariance; a group counts as zero-variance when all its
// roles are. A rollout is kept when any of its roles is.
//
// ModeRoleBaseline needs baseline, the state carried across steps (persist
// it in state.json), keyed by role; it reads the baselines as they were
// before this step, then updates them with this step's mean reward per
// role. A role seen for the first time starts from this step's mean.
// ComputeAdvantages does not touch baseline in other modes, and baseline
// may be nil there.
//
// The step statistics are taken over (rollout, trained role) outcomes, so a
// game whose roles share one reward has the statistics of its rollouts.
func ComputeAdvantages(rollouts []dataset.Rollout, opts AdvantageOptions, baseline *RoleBaseline) ([]dataset.Rollout, AdvantageStats, error) {
	var st AdvantageStats
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, st, fmt.Errorf("grpo.ComputeAdvantages: %w", err)
	}
	if opts.Mode == ModeRoleBaseline && baseline == nil {
		return nil, st, fmt.Errorf("grpo.ComputeAdvantages: mode %q needs a RoleBaseline", ModeRoleBaseline)
	}
	groups, err := collectGroups(rollouts, &st)
	if err != nil {
		return nil, st, fmt.Errorf("grpo.ComputeAdvantages: %w", err)
	}
	var acc stepStats
	kept := map[outcome]bool{}
	for _, g := range groups {
		acc.add(&st, applyGroup(rollouts, g, opts, kept))
	}
	acc.finish(&st, rollouts, kept)
	if opts.Mode == ModeRoleBaseline {
		roleBaselineAdvantages(rollouts, opts, baseline)
	}
	out := keptRollouts(rollouts, kept)
	st.Kept = len(out)
	return out, st, nil
}

// groupAdvantages is the advantage of each of one (group, role)'s scored
// rewards, in their order, by opts.Mode (ModeGroup or ModeGroupMean; opts
// with its defaults): (r − mean)/(std + ε) or r − mean, the mean and the
// std (with opts.StdDDOF) taken over rewards. A zero-variance group
// (zeroVariance) gets 0 exactly, not a rounding residue scaled by 1/ε.
func groupAdvantages(rewards []float64, opts AdvantageOptions) []float64 {
	adv := make([]float64, len(rewards))
	if zeroVariance(rewards) {
		return adv
	}
	mean, std := meanStd(rewards, opts.StdDDOF)
	for i, r := range rewards {
		if opts.Mode == ModeGroup {
			adv[i] = (r - mean) / (std + opts.Epsilon)
		} else {
			adv[i] = r - mean
		}
	}
	return adv
}

// zeroVariance reports whether rewards are all equal, within
// ZeroVarianceTolerance (a single reward included).
func zeroVariance(rewards []float64) bool {
	return slices.Max(rewards)-slices.Min(rewards) <= ZeroVarianceTolerance
}

// outcome is one (rollout, role) outcome: rollouts[r].Roles[k].
type outcome struct{ r, k int }

// group is one prompt row's scored outcomes by trained role, the roles in
// first-seen order.
type group struct {
	roles    []string
	outcomes map[string][]outcome
}

// collectGroups sets every role's Advantage to 0 and gathers each group's
// (GroupID's) scored outcomes, the groups in first-seen order. It counts
// st's Groups, and its Scored and Excluded rollouts.
func collectGroups(rollouts []dataset.Rollout, st *AdvantageStats) ([]*group, error) {
	var order []*group
	byID := map[string]*group{}
	for i := range rollouts {
		r := &rollouts[i]
		if r.GroupID == "" {
			return nil, fmt.Errorf("rollout %q has no group_id", r.RolloutID)
		}
		g, ok := byID[r.GroupID]
		if !ok {
			g = &group{outcomes: map[string][]outcome{}}
			byID[r.GroupID] = g
			order = append(order, g)
		}
		scored := false
		for k := range r.Roles {
			ro := &r.Roles[k]
			ro.Advantage = 0
			if !Scored(r, ro) {
				continue
			}
			if _, ok := g.outcomes[ro.Role]; !ok {
				g.roles = append(g.roles, ro.Role)
			}
			g.outcomes[ro.Role] = append(g.outcomes[ro.Role], outcome{i, k})
			scored = true
		}
		if scored {
			st.Scored++
		} else {
			st.Excluded++
		}
	}
	st.Groups = len(order)
	return order, nil
}

// groupResult is what one group leaves for the step's statistics: each
// role's scored rewards (in the group's role order), whether every role
// was zero-variance and whether any outcome was kept.
type groupResult struct {
	roles        []string
	rewards      [][]float64
	zeroVariance bool
	kept         bool
}

// applyGroup sets the advantages of g's outcomes, (group, role) by
// (group, role), and marks in kept the outcomes that get one. In
// ModeGroup and ModeGroupMean a zero-variance (group, role) is dropped
// unless opts.KeepZeroVariance. In ModeRoleBaseline every scored outcome
// is kept; its advantage r − b(role) is set by roleBaselineAdvantages once
// the step's role means are known.
func applyGroup(rollouts []dataset.Rollout, g *group, opts AdvantageOptions, kept map[outcome]bool) groupResult {
	res := groupResult{roles: g.roles, rewards: make([][]float64, len(g.roles)), zeroVariance: true}
	for i, role := range g.roles {
		outs := g.outcomes[role]
		xs := make([]float64, len(outs))
		for k, o := range outs {
			xs[k] = float64(rollouts[o.r].Roles[o.k].Reward)
		}
		res.rewards[i] = xs
		zeroVar := zeroVariance(xs)
		res.zeroVariance = res.zeroVariance && zeroVar
		switch {
		case opts.Mode == ModeRoleBaseline:
		case zeroVar && !opts.KeepZeroVariance:
			continue
		default:
			for k, a := range groupAdvantages(xs, opts) {
				o := outs[k]
				rollouts[o.r].Roles[o.k].Advantage = float32(a)
			}
		}
		for _, o := range outs {
			kept[o] = true
		}
		res.kept = true
	}
	return res
}

// stepStats accumulates a step's AdvantageStats over its groups, in group
// order.
type stepStats struct {
	all         []float64            // every scored reward
	byRole      map[string][]float64 // each role's scored rewards
	scoreGroups int                  // the groups with a scored reward
}

// add counts one group's result into st.
func (a *stepStats) add(st *AdvantageStats, r groupResult) {
	if len(r.roles) == 0 {
		st.EmptyGroups++
		return
	}
	if a.byRole == nil {
		a.byRole = map[string][]float64{}
	}
	var rs []float64
	for i, role := range r.roles {
		rs = append(rs, r.rewards[i]...)
		a.byRole[role] = append(a.byRole[role], r.rewards[i]...)
	}
	a.all = append(a.all, rs...)
	mean, _ := meanStd(rs, 0)
	st.ScoreMin += slices.Min(rs)
	st.ScoreMean += mean
	st.ScoreMax += slices.Max(rs)
	a.scoreGroups++
	if r.zeroVariance {
		st.ZeroVarianceGroups++
		if !r.kept {
			st.DroppedZeroVariance++
		}
	}
	if r.kept {
		st.KeptGroups++
	}
}

// finish completes st once every group is added: the reward mean and std,
// the group score averages, and each role's statistics with the count of
// its kept outcomes.
func (a *stepStats) finish(st *AdvantageStats, rollouts []dataset.Rollout, kept map[outcome]bool) {
	if len(a.all) > 0 {
		st.RewardMean, st.RewardStd = meanStd(a.all, 0)
	}
	if a.scoreGroups > 0 {
		n := float64(a.scoreGroups)
		st.ScoreMin /= n
		st.ScoreMean /= n
		st.ScoreMax /= n
	}
	if len(a.byRole) > 0 {
		st.Roles = map[string]RoleStats{}
		for role, xs := range a.byRole {
			m, sd := meanStd(xs, 0)
			st.Roles[role] = RoleStats{Scored: len(xs), RewardMean: m, RewardStd: sd}
		}
	}
	for o := range kept {
		role := rollouts[o.r].Roles[o.k].Role
		rs := st.Roles[role]
		rs.Kept++
		st.Roles[role] = rs
	}
}

// keptRollouts returns copies (their roles cloned) of the rollouts with a
// kept outcome, in input order.
func keptRollouts(rollouts []dataset.Rollout, kept map[outcome]bool) []dataset.Rollout {
	keep := make([]bool, len(rollouts))
	for o := range kept {
		keep[o.r] = true
	}
	var out []dataset.Rollout
	for i, k := range keep {
		if k {
			c := rollouts[i]
			c.Roles = slices.Clone(c.Roles)
			out = append(out, c)
		}
	}
	return out
}

// roleBaselineAdvantages sets r − b(role) on the kept outcomes, b read
// before this step's update, then folds this step's role means into
// baseline. Roles are visited in first-seen order (rollout order), so the
// result does not depend on map order.
func roleBaselineAdvantages(rollouts []dataset.Rollout, opts AdvantageOptions, baseline *RoleBaseline) {
	type acc struct {
		sum float64
		n   int
	}
	var roles []string
	sums := map[string]*acc{}
	for i := range rollouts {
		r := &rollouts[i]
		for k := range r.Roles {
			ro := &r.Roles[k]
			if !Scored(r, ro) {
				continue
			}
			a, ok := sums[ro.Role]
			if !ok {
				a = &acc{}
				sums[ro.Role] = a
				roles = append(roles, ro.Role)
			}
			a.sum += float64(ro.Reward)
			a.n++
		}
	}
	before := make(map[string]float64, len(roles))
	means := make(map[string]float64, len(roles))
	for _, role := range roles {
		means[role] = sums[role].sum / float64(sums[role].n)
		b, ok := baseline.Value(role)
		if !ok {
			b = means[role]
		}
		before[role] = b
	}
	for i := range rollouts {
		r := &rollouts[i]
		for k := range r.Roles {
			if ro := &r.Roles[k]; Scored(r, ro) {
				ro.Advantage = float32(float64(ro.Reward) - before[ro.Role])
			}
		}
	}
	for _, role := range roles {
		baseline.Update(role, means[role], opts.BaselineMomentum)
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
