package train

import (
	"fmt"
	"sort"

	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// streamSeries is where the series of a streaming run stand (series
// training on the stream). The stream keeps Slots·(1+k) series, k the
// staleness bound, so that k+1 batches' groups can be in flight while each
// series plays one game at a time: a slot's next game starts only once its
// previous game's group has ended, from the state of that group's
// continuation of lowest index that did not fail (as step by step). A game
// whose every continuation failed stops its series, named in a warning,
// and the slot starts its series of the next generation; the other series
// go on.
//
// Each group's journal line holds its slot's cursor after it, so a
// resumed stream goes on from the furthest cursor the journal holds for
// each slot (a group played but not yet journaled is played again).
type streamSeries struct {
	// cursors are the slots' next games; busy marks the slots whose game
	// is in flight.
	cursors []SeriesCursor
	busy    []bool
	// gens are the generations laid out so far.
	gens map[int][]rollout.Series
}

// streamSlots is the number of series a streaming run keeps.
func (l *Loop) streamSlots() int {
	k := l.opts.MaxStaleness
	if m := l.opts.MaxOffPolicySteps; m > 0 {
		k = min(k, m)
	}
	return l.opts.Series.Slots * (1 + k)
}

// startSeries sets the stream's series where the journal left them: each
// slot at the furthest cursor the journal holds for it, or at the start of
// generation 0 when it holds none (the slot's first game never ended). A
// run that samples a later step with no series in its journal (it sampled
// step by step before) starts every slot in a generation of its own.
func (s *stream) startSeries(journaled map[int]SeriesCursor) error {
	l := s.l
	slots := l.streamSlots()
	gen := 0
	if s.first > 1 && len(journaled) == 0 {
		gen = 1_000_000 + s.first
		l.log.Warn("the stream journal holds no series: every series slot starts a series of its own", zap.Int("step", s.first), zap.Int("slots", slots))
	}
	fresh, err := l.freshCursors(gen, slots)
	if err != nil {
		return err
	}
	ss := &streamSeries{cursors: fresh, busy: make([]bool, slots), gens: map[int][]rollout.Series{}}
	for slot, c := range journaled {
		if slot >= 0 && slot < slots {
			ss.cursors[slot] = c
		}
	}
	s.series = ss
	return nil
}

// freeSlot is the lowest slot whose series has no game in flight, or -1.
// Called with mu held.
func (ss *streamSeries) freeSlot() int {
	for i, b := range ss.busy {
		if !b {
			return i
		}
	}
	return -1
}

// seriesGroup makes g the next game of slot's series. Called with mu
// held.
func (s *stream) seriesGroup(slot int, g *streamGroup) (*rollout.StateJob, error) {
	ss := s.series
	job, _, err := s.l.seriesJob(ss.cursors[slot], len(ss.cursors), ss.gens)
	if err != nil {
		return nil, fmt.Errorf("train: stream series: %w", err)
	}
	ss.busy[slot] = true
	g.slot = slot
	return &job, nil
}

// seriesEnded moves g's slot past its game, now played, and frees the
// slot: to the state of the continuation of lowest index that did not
// fail, or, when every one failed, to the slot's series of the next
// generation. It records the cursor in g for the journal. Called with mu
// held.
func (s *stream) seriesEnded(g *streamGroup) {
	ss := s.series
	slot := g.slot
	ss.busy[slot] = false
	played := append([]rollout.Played(nil), g.played...)
	sort.Slice(played, func(i, j int) bool { return played[i].Rollout.Index < played[j].Rollout.Index })
	c := ss.cursors[slot]
	var next SeriesCursor
	var err error
	chosen := false
	for _, p := range played {
		if p.Rollout.Failed || p.Next == nil {
			continue
		}
		games := len(ss.gens[c.Generation][slot].Games)
		next, err = s.l.advance(c, games, len(ss.cursors), p.Next)
		chosen = true
		break
	}
	if !chosen {
		s.l.log.Warn("every continuation of a series game failed: the series stops and its slot starts a new one; the other series go on",
			zap.String("series", c.Series), zap.Int("game", c.Index), zap.String("group", g.id), zap.String("error", firstErrorOf(played)))
		next, err = s.l.nextSeries(c, len(ss.cursors))
	}
	if err != nil {
		s.runErr = fmt.Errorf("train: stream series: %w", err)
		s.cancel()
		return
	}
	ss.cursors[slot] = next
	g.after = &next
}

// seriesCancelled frees the slot of g, cancelled before its game ended:
// the slot plays the same game again. Called with mu held.
func (s *stream) seriesCancelled(g *streamGroup) {
	if s.series != nil && g.slot >= 0 {
		s.series.busy[g.slot] = false
	}
}

// firstErrorOf is the first failure among played.
func firstErrorOf(played []rollout.Played) string {
	for _, p := range played {
		if p.Rollout.Failed {
			return p.Rollout.Error
		}
	}
	return ""
}
