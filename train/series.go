package train

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// SeriesOptions make training run over series of a SeriesGame (seed 002's
// repeated negotiation), with the state each series carries (trust):
//
//   - Slots series are in flight. A step plays the next game of each: its
//     group is GroupSize continuations of that game from the series'
//     carried state, which share the game's own draws (turn order,
//     scripted parties) and sample with their own seeds, so advantages
//     compare what the policy did in the same game from the same state
//     (rollout.Runner.RunFromStates).
//   - After the step the series goes on from one continuation: the one of
//     lowest index that did not fail (index 0 unless it failed), an
//     unbiased sample of the policy's play, not the best of the group. If
//     every continuation failed, the series plays the same game again.
//   - A series that has played its last game is replaced by the same slot
//     of the next generation: Plan(n, seed) laid out with the generation's
//     own seed, so fresh scenarios and a fresh state.
//   - The cursors after each step (slot, generation, next game, state) are
//     written in the step's sidecar with its metrics, so a resumed run goes
//     on from exactly where the written batches left every series.
type SeriesOptions struct {
	// Slots is the number of series in flight (the groups of a step).
	Slots int
	// Plan lays out n series per unit (rollout.Spec.Series with the game's
	// section and the curriculum): a generation takes its first Slots.
	Plan func(n int, seed int64) ([]rollout.Series, error)
}

// SeriesCursor is where one slot's series stands between steps.
type SeriesCursor struct {
	Slot       int    `json:"slot"`
	Generation int    `json:"generation"`
	Series     string `json:"series"`
	// Index is the next game to play; State the state it starts from (nil:
	// the series' initial state).
	Index int             `json:"index"`
	State json.RawMessage `json:"state,omitempty"`
}

// generation returns the slots series of generation gen (Slots of them
// step by step; a streaming run keeps more in flight).
func (l *Loop) generation(gen, slots int) ([]rollout.Series, error) {
	so := l.opts.Series
	seed := rollout.DeriveSeed(l.opts.Seed, "series-generation", int64(gen))
	unit, err := so.Plan(1, seed)
	if err != nil {
		return nil, fmt.Errorf("train: series generation %d: %w", gen, err)
	}
	if len(unit) == 0 {
		return nil, fmt.Errorf("train: series generation %d: the plan is empty", gen)
	}
	all, err := so.Plan((slots+len(unit)-1)/len(unit), seed)
	if err != nil {
		return nil, fmt.Errorf("train: series generation %d: %w", gen, err)
	}
	if len(all) < slots {
		return nil, fmt.Errorf("train: series generation %d: the plan has %d series for %d slots", gen, len(all), slots)
	}
	out := all[:slots]
	for i := range out {
		// Plans name series alike in every generation: tell them apart.
		out[i].ID = fmt.Sprintf("g%03d-%s", gen, out[i].ID)
	}
	return out, nil
}

// cursorsBefore returns where every slot stands before step: the start of
// generation 0 at step 1, else the cursors step−1's sidecar recorded. A
// lost sidecar (a trained step whose sampling files are gone) restarts
// every series in a generation of its own.
func (l *Loop) cursorsBefore(step int) ([]SeriesCursor, error) {
	slots := l.opts.Series.Slots
	if step == 1 {
		return l.freshCursors(0, slots)
	}
	sc, err := l.readSidecar(step - 1)
	if err == nil && len(sc.Series) == l.opts.Series.Slots {
		return sc.Series, nil
	}
	l.log.Warn("the series cursors of the previous step are lost; every series starts afresh",
		zap.Int("step", step), zap.Error(err))
	return l.freshCursors(1_000_000+step, slots)
}

// freshCursors are the cursors of the start of generation gen's slots
// series.
func (l *Loop) freshCursors(gen, slots int) ([]SeriesCursor, error) {
	gs, err := l.generation(gen, slots)
	if err != nil {
		return nil, err
	}
	out := make([]SeriesCursor, len(gs))
	for i, s := range gs {
		out[i] = SeriesCursor{Slot: i, Generation: gen, Series: s.ID}
	}
	return out, nil
}

// sampleSeries plays step's groups: the next game of each slot's series,
// GroupSize times from its state, calling tick after each, and returns
// the rollouts (sorted) and the cursors after the step.
func (l *Loop) sampleSeries(ctx context.Context, runner *rollout.Runner, step int, tick func()) ([]dataset.Rollout, rollout.Summary, []SeriesCursor, error) {
	cursors, err := l.cursorsBefore(step)
	if err != nil {
		return nil, rollout.Summary{}, nil, err
	}
	gens := map[int][]rollout.Series{}
	jobs := make([]rollout.StateJob, len(cursors))
	series := make([]rollout.Series, len(cursors))
	for i, c := range cursors {
		if jobs[i], series[i], err = l.seriesJob(c, len(cursors), gens); err != nil {
			return nil, rollout.Summary{}, nil, fmt.Errorf("train.Loop step %d: %w", step, err)
		}
	}
	type result struct {
		rec  dataset.Rollout
		next []byte
	}
	var got []result
	sum, err := runner.RunFromStates(ctx, jobs, func(r *dataset.Rollout, next []byte) error {
		got = append(got, result{*r, next})
		tick()
		return nil
	})
	if err != nil {
		return nil, sum, nil, fmt.Errorf("train.Loop step %d: %w", step, err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].rec.RolloutID < got[j].rec.RolloutID })
	rs := make([]dataset.Rollout, len(got))
	after := append([]SeriesCursor(nil), cursors...)
	chosen := make([]bool, len(cursors))
	for i, g := range got {
		rs[i] = g.rec
		slot := -1
		for k := range jobs {
			if rollout.GroupID(step, k) == g.rec.GroupID {
				slot = k
			}
		}
		if slot < 0 || chosen[slot] || g.rec.Failed || g.next == nil {
			continue
		}
		chosen[slot] = true // the lowest index that did not fail: got is sorted
		if after[slot], err = l.advance(after[slot], len(series[slot].Games), len(cursors), g.next); err != nil {
			return nil, sum, nil, err
		}
	}
	return rs, sum, after, nil
}

// seriesJob returns the next game of cursor c's series as a job, and
// the series, its generation of slots series laid out once in gens.
func (l *Loop) seriesJob(c SeriesCursor, slots int, gens map[int][]rollout.Series) (rollout.StateJob, rollout.Series, error) {
	if gens[c.Generation] == nil {
		g, err := l.generation(c.Generation, slots)
		if err != nil {
			return rollout.StateJob{}, rollout.Series{}, err
		}
		gens[c.Generation] = g
	}
	s := gens[c.Generation][c.Slot]
	if s.ID != c.Series || c.Index >= len(s.Games) {
		return rollout.StateJob{}, rollout.Series{}, fmt.Errorf("slot %d's cursor (series %s game %d) does not match generation %d's plan (series %s of %d games)",
			c.Slot, c.Series, c.Index, c.Generation, s.ID, len(s.Games))
	}
	state := []byte(c.State)
	if c.Index == 0 && state == nil {
		state = s.Init
	}
	return rollout.StateJob{Series: s.ID, Index: c.Index, Prompt: s.Games[c.Index], State: state}, s, nil
}

// advance moves cursor c past the game it played, to state next; past a
// series' last game (of games) it starts the slot's series of the next
// generation (of slots series).
func (l *Loop) advance(c SeriesCursor, games, slots int, next []byte) (SeriesCursor, error) {
	c.Index, c.State = c.Index+1, append(json.RawMessage(nil), next...)
	if c.Index < games {
		return c, nil
	}
	return l.nextSeries(c, slots)
}

// nextSeries is the start of the series of c's slot in the generation
// after c's (of slots series).
func (l *Loop) nextSeries(c SeriesCursor, slots int) (SeriesCursor, error) {
	gen, err := l.generation(c.Generation+1, slots)
	if err != nil {
		return c, err
	}
	return SeriesCursor{Slot: c.Slot, Generation: c.Generation + 1, Series: gen[c.Slot].ID}, nil
}
