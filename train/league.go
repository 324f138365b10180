package train

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// LeagueRole is a role played by a league (roles.<role>.policy: league):
// its options and its frozen members, Frozen[i] being league.FrozenID(i)
// (roles.<role>.pool[i]). The run's own snapshots join as training goes.
type LeagueRole struct {
	Options league.Options
	Frozen  []rollout.Player
}

// leagueRoles are the league's roles, sorted.
func (l *Loop) leagueRoles() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for r := range l.opts.League {
			if !yield(r) {
				return
			}
		}
	})
}

// loadLeague reads the league after the newest written step before step
// (the state a run resumed at step samples from).
func (l *Loop) loadLeague(step int) error {
	if len(l.opts.League) == 0 {
		return nil
	}
	s, err := league.LoadBefore(l.opts.Dir, l.opts.RunID, step, l.leagueRoles())
	if err != nil {
		return fmt.Errorf("train.Loop: %w", err)
	}
	l.league = s
	return nil
}

// resumeLeague takes the league after step, whose batch is final, from
// its file (written before the batch's .ready).
func (l *Loop) resumeLeague(step int) error {
	if len(l.opts.League) == 0 {
		return nil
	}
	s, ok, err := league.Load(l.opts.Dir.LeaguePath(step), l.opts.RunID)
	if err != nil {
		return fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	if !ok {
		return fmt.Errorf("train.Loop step %d: the step's batch is final but %s is missing: it is written before the batch; "+
			"restore it, or remove the step's batch and .ready to sample the step again", step, l.opts.Dir.LeaguePath(step))
	}
	l.league = s
	return nil
}

// leagueDraw is step's league: the members it holds (the snapshots of
// versions up to pv joined), one drawn per group for each league role and
// their adapters loaded, a member whose adapter folder is gone or fails to
// load named in a warning and left out of the draw. It returns the league
// as the step leaves it before rating and the players of each group.
func (l *Loop) leagueDraw(ctx context.Context, step, pv, groups int) (*league.State, map[string]map[string]rollout.Player, error) {
	if len(l.opts.League) == 0 {
		return nil, nil, nil
	}
	next := l.prepareLeague(l.league, step, pv)
	drawn := map[string]map[string]rollout.Player{}
	for _, role := range l.leagueRoles() {
		lr := l.opts.League[role]
		r := next.Role(role)
		var draws []string
		for {
			var err error
			draws, err = r.Draw(lr.Options, l.opts.Seed, step, groups)
			if err != nil {
				return nil, nil, fmt.Errorf("train.Loop step %d: %w", step, err)
			}
			failed, warns := r.Serve(ctx, l.opts.Adapters, step, draws, lr.Options, l.state.Adapter)
			for _, w := range warns {
				l.log.Warn("league adapter unload failed", zap.Error(w))
			}
			if len(failed) == 0 {
				break
			}
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("train.Loop step %d: %w", step, ctx.Err())
			}
			for _, id := range failed {
				l.log.Warn("league member skipped: its adapter does not load", zap.String("role", role), zap.String("member", id),
					zap.String("reason", r.Member(id).Skipped))
			}
		}
		r.Count(draws)
		for g, id := range draws {
			gid := rollout.GroupID(step, g)
			if drawn[gid] == nil {
				drawn[gid] = map[string]rollout.Player{}
			}
			drawn[gid][role] = l.memberPlayer(lr, r.Member(id))
		}
	}
	return next, drawn, nil
}

// prepareLeague is base cloned for step: the members it holds with the
// snapshots of versions up to pv joined, each snapshot's adapter named and
// its folder found, a member whose folder is gone or incomplete or whose
// frozen entry the config no longer has marked skipped (named in a
// warning).
func (l *Loop) prepareLeague(base *league.State, step, pv int) *league.State {
	next := base.Clone()
	next.Step = step
	for _, role := range l.leagueRoles() {
		lr := l.opts.League[role]
		r := next.Role(role)
		r.Join(step, pv, len(lr.Frozen), lr.Options)
		for i := range r.Members {
			m := &r.Members[i]
			if m.Kind == league.KindFrozen {
				if frozenIndex(m.ID) >= len(lr.Frozen) {
					m.Skipped = fmt.Sprintf("roles.%s.pool has %d entries now", role, len(lr.Frozen))
				}
				continue
			}
			if m.Version == 0 {
				continue
			}
			m.Model = l.AdapterName(m.Version)
			dir, err := l.trainedAdapter(m.Version)
			if err != nil {
				m.Skipped = err.Error()
				l.log.Warn("league member skipped: its adapter folder is gone or incomplete", zap.String("role", role),
					zap.String("member", m.ID), zap.String("folder", l.opts.Dir.CheckpointDir(m.Version)), zap.Error(err))
				continue
			}
			m.Path = dir
		}
	}
	return next
}

// memberPlayer is what plays a league member: a frozen agent of the pool,
// the base model (snapshot 0) or a snapshot's adapter on the policy's
// endpoints.
func (l *Loop) memberPlayer(lr LeagueRole, m *league.Member) rollout.Player {
	var pl rollout.Player
	switch {
	case m.Kind == league.KindFrozen:
		pl = lr.Frozen[frozenIndex(m.ID)]
	case m.Version == 0:
		pl = rollout.Player{Kind: dataset.PolicyBase, Model: l.opts.Rollout.Model, Tokens: l.opts.Rollout.Policy}
	default:
		pl = rollout.Player{Kind: dataset.PolicyAdapter, Model: m.Model, Tokens: l.opts.Rollout.Policy}
	}
	pl.Trained, pl.Member, pl.MemberVersion = false, m.ID, m.Version
	return pl
}

// frozenIndex is the pool index of frozen member id (league.FrozenID).
func frozenIndex(id string) int {
	i := -1
	if _, err := fmt.Sscanf(id, "pool[%d]", &i); err != nil || i < 0 {
		return math.MaxInt
	}
	return i
}

// leagueScore is the trained policy's result in rollout r against the
// member playing role: in a zero-sum game (rollout.Spec.ZeroSum) the
// trained roles' mean score against the role's, a win, draw or loss; in
// any other (a cooperative game, deliberation) the trained roles' mean
// score scaled to [0, 1] by the judge's scale. ok is false when r has no
// result to rate.
func leagueScore(r *dataset.Rollout, role string, zeroSum bool, scale dataset.ScoreScale) (float64, bool) {
	opp := r.Role(role)
	if r.Failed || opp == nil || opp.Member == "" {
		return 0, false
	}
	var sum float64
	n := 0
	for _, ro := range r.Roles {
		if ro.Trained && ro.Scored && ro.Role != role {
			sum += float64(ro.Score)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	mine := sum / float64(n)
	if zeroSum {
		if !opp.Scored {
			return 0, false
		}
		switch o := float64(opp.Score); {
		case mine > o:
			return 1, true
		case mine == o:
			return 0.5, true
		}
		return 0, true
	}
	if scale.Max > scale.Min {
		mine = (mine - scale.Min) / (scale.Max - scale.Min)
	}
	return min(max(mine, 0), 1), true
}

// rateLeague ends step's rating period over its judged rollouts, writes
// the league after the step (league/step-N.json, before the batch is
// final) and adds its metrics to m.
func (l *Loop) rateLeague(step int, s sampled, j judged, m metrics.Line) error {
	if s.league == nil {
		return nil
	}
	zeroSum := false
	if spec, ok := rollout.Lookup(l.opts.Rollout.Game.Name()); ok {
		zeroSum = spec.ZeroSum
	}
	loads, unloads, members := 0, 0, 0
	for _, role := range l.leagueRoles() {
		var games []league.Game
		for i := range s.rs {
			if score, ok := leagueScore(&s.rs[i], role, zeroSum, j.res.Scale); ok {
				games = append(games, league.Game{Member: s.rs[i].Role(role).Member, Score: score})
			}
		}
		sort.SliceStable(games, func(a, b int) bool { return games[a].Member < games[b].Member })
		r := s.league.Role(role)
		r.Rate(step, s.pv, games, l.opts.League[role].Options)
		loads, unloads, members = loads+r.Loads, unloads+r.Unloads, members+len(r.Members)
		m[metrics.LeagueRatingPrefix+metrics.Key(role)] = r.Trained.R
		m[metrics.LeagueRDPrefix+metrics.Key(role)] = r.Trained.RD
	}
	m[metrics.KeyLeagueLoads], m[metrics.KeyLeagueUnloads], m[metrics.KeyLeagueMembers] = loads, unloads, members
	if err := league.Save(l.opts.Dir.LeaguePath(step), s.league); err != nil {
		return fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	return nil
}
