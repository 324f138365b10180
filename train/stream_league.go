package train

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// streamLeague is the league of a streaming run. Each group draws its
// league members as it starts, from the league after the newest written
// batch with the snapshots up to the policy served joined (the view), by
// the role's rule, seeded per block of PromptsPerStep groups as prompt
// rows are. The adapters drawn are loaded before the group starts; at most
// max_loaded per role stay loaded, the least recently drawn unloaded first
// but never one a group in flight plays or the policy served. A batch
// counts the draws of the groups it takes and rates the trained policy on
// them, as a step does step by step.
type streamLeague struct {
	// base is the league after the newest written batch; view is base
	// with the members joined for the version served (nil: build it
	// anew).
	base, view *league.State
	// viewFor is the policy version view was built for.
	viewFor int
	// loaded are the league's adapters loaded now, by role: model → the
	// group sequence number that last drew it.
	loaded map[string]map[string]int
	// loads and unloads count the adapter loads and unloads of each role
	// since the last take.
	loads, unloads map[string]int
}

// newStreamLeague is the stream's league, starting from base (the loop's
// league after the newest written batch).
func newStreamLeague(base *league.State) *streamLeague {
	return &streamLeague{base: base.Clone(), loaded: map[string]map[string]int{}, loads: map[string]int{}, unloads: map[string]int{}}
}

// setLeague gives the stream the league after a written batch.
func (s *stream) setLeague(lg *league.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.league != nil {
		s.league.base, s.league.view = lg, nil
	}
}

// leagueView is the view the stream draws from now: the league after the
// newest written batch with the members of the policy served joined, each
// snapshot's adapter named and found (prepareMembers). Called with mu
// held.
func (s *stream) leagueView() *league.State {
	sl := s.league
	if sl.view == nil || sl.viewFor != s.version {
		sl.view, sl.viewFor = s.l.prepareLeague(sl.base, s.next, s.version), s.version
	}
	return sl.view
}

// drawPlayers draws the league members of the group numbered seq from
// the view and loads their adapters. mu is held on entry and return, and
// released while adapters load. A member whose adapter fails to load is
// named in a warning, left out of the view, and the group draws again.
func (s *stream) drawPlayers(ctx context.Context, seq int) (map[string]rollout.Player, error) {
	l := s.l
	b := l.opts.PromptsPerStep
	block := s.first*1_000_000 + seq/b
	seed := rollout.DeriveSeed(l.opts.Seed, "stream-league", 0)
	for {
		view := s.leagueView()
		players := map[string]rollout.Player{}
		type load struct {
			role, id, model, path string
			unloading             chan struct{} // an unload of model still under way
		}
		var loads []load
		for _, role := range l.leagueRoles() {
			lr := l.opts.League[role]
			r := view.Role(role)
			draws, err := r.Draw(lr.Options, seed, block, b)
			if err != nil {
				return nil, fmt.Errorf("train: stream: %w", err)
			}
			m := r.Member(draws[seq%b])
			players[role] = l.memberPlayer(lr, m)
			if m.Model == "" {
				continue
			}
			if s.league.loaded[role] == nil {
				s.league.loaded[role] = map[string]int{}
			}
			if _, ok := s.league.loaded[role][m.Model]; !ok && m.Model != s.served && !s.playing(m.Model) {
				loads = append(loads, load{role, m.ID, m.Model, m.Path, s.unloading[m.Model]})
			}
			s.league.loaded[role][m.Model] = seq
		}
		if len(loads) == 0 {
			s.evictLeague(players)
			return players, nil
		}
		s.mu.Unlock()
		failed := map[int]error{}
		for i, ld := range loads {
			if ld.unloading != nil {
				select {
				case <-ld.unloading:
				case <-ctx.Done():
				}
			}
			if err := l.opts.Adapters.LoadLoRA(ctx, ld.model, ld.path); err != nil {
				failed[i] = err
			}
		}
		s.mu.Lock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, ld := range loads {
			if err, ok := failed[i]; ok {
				delete(s.league.loaded[ld.role], ld.model)
				// The view may have been built anew while the lock was
				// released: mark the member in the one drawn from next.
				if m := s.leagueView().Role(ld.role).Member(ld.id); m != nil {
					m.Skipped = fmt.Sprintf("adapter %s from %s does not load: %v", ld.model, ld.path, err)
				}
				l.log.Warn("league member skipped: its adapter does not load", zap.String("role", ld.role), zap.String("member", ld.id), zap.Error(err))
				continue
			}
			s.league.loads[ld.role]++
		}
		if len(failed) == 0 {
			s.evictLeague(players)
			return players, nil
		}
	}
}

// evictLeague unloads, in the background, the least recently drawn league
// adapters of each role beyond its max_loaded that no group in flight
// plays, the policy served does not use and the group starting (players)
// does not draw. Called with mu held.
func (s *stream) evictLeague(players map[string]rollout.Player) {
	l := s.l
	for _, role := range l.leagueRoles() {
		limit := l.opts.League[role].Options.WithDefaults().MaxLoaded
		loaded := s.league.loaded[role]
		models := slices.Collect(maps.Keys(loaded))
		sort.Slice(models, func(i, j int) bool { return loaded[models[i]] < loaded[models[j]] })
		for _, name := range models {
			if len(loaded) <= limit {
				break
			}
			if name == s.served || s.playing(name) || slices.ContainsFunc(slices.Collect(maps.Values(players)), func(p rollout.Player) bool { return p.Model == name }) {
				continue
			}
			delete(loaded, name)
			s.league.unloads[role]++
			if s.retired[name] || s.leagueHolds(name) {
				continue // another role holds it, or unloadRetired will
			}
			s.unloadLater(name, "league adapter unload failed")
		}
	}
}

// leagueHolds reports whether the stream's league keeps adapter name
// loaded. Called with mu held.
func (s *stream) leagueHolds(name string) bool {
	if s.league == nil {
		return false
	}
	for _, loaded := range s.league.loaded {
		if _, ok := loaded[name]; ok {
			return true
		}
	}
	return false
}

// takeLeague is step's league made of the groups taken: the league after
// the step before with the members joined up to the newest policy that
// sampled them (newest), their draws counted, the adapters loaded and the
// churn since the last take; rated once judged (rateLeague). Called with
// mu held.
func (s *stream) takeLeague(step, newest int, taken []*streamGroup) *league.State {
	l := s.l
	next := l.league.Clone()
	next.Step = step
	for _, role := range l.leagueRoles() {
		lr := l.opts.League[role]
		r := next.Role(role)
		r.Join(step, newest, len(lr.Frozen), lr.Options)
		var draws []string
		for _, g := range taken {
			if len(g.rs) > 0 {
				if ro := g.rs[0].Role(role); ro != nil && ro.Member != "" {
					draws = append(draws, ro.Member)
				}
			}
		}
		r.Count(draws)
		r.Loads, r.Unloads = s.league.loads[role], s.league.unloads[role]
		r.LoadsTotal += r.Loads
		r.UnloadsTotal += r.Unloads
		s.league.loads[role], s.league.unloads[role] = 0, 0
		loaded := s.league.loaded[role]
		models := slices.Collect(maps.Keys(loaded))
		sort.Slice(models, func(i, j int) bool { return loaded[models[i]] < loaded[models[j]] })
		r.Loaded = r.Loaded[:0]
		for _, m := range models {
			r.Loaded = append(r.Loaded, league.Slot{Model: m, LastStep: step})
		}
	}
	return next
}
