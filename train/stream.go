package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/parleyhq/parley/curriculum"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// stream plays groups continuously for a training run with staleness
// k ≥ 1 (train.sampling: stream): the runner's worker pool
// (rollout.concurrency rollouts in flight) takes a new rollout the moment
// one finishes, whatever step it will land in; each group is judged as
// soon as its G rollouts are in; and step s's batch takes the first
// PromptsPerStep judged groups, in completion order, that meet the
// staleness bound (with dynamic sampling, the first informative ones,
// the others landing in the step's rollouts untrained).
//
// A group plays throughout with the policy served when it started: its
// adapter stays loaded until its last group ends, so both agents of a
// dialogue speak with one policy, and new adapters are loaded while
// groups play, never by draining them. (With full weights the weights
// change under the groups in flight, and each turn records the version
// it was sampled with.) A group whose policy is older than a batch may
// take (step-1-k, or step-1-max_off_policy_steps when smaller) is
// cancelled, its requests aborted, and counted; one judged already is
// dropped and counted.
//
// New groups are admitted while the groups in flight and judged but not
// taken would all fit the batches that the staleness bound still lets
// the served policy fill (a batch taking as many groups as the last
// took: dynamic sampling takes those of equal rewards too), so that the
// stream never samples what it must throw away: k+1 batches ahead when
// training keeps up, fewer when it does not.
//
// A crash loses the groups not yet in a written batch (they are sampled
// anew; a written batch is final as before); nothing is trained twice.
type stream struct {
	l      *Loop
	runner *rollout.Runner
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the runner has returned
	sem    chan struct{} // groups judged at once
	judges sync.WaitGroup

	mu   sync.Mutex
	cond *sync.Cond
	// first is the first step whose batch this session writes; next the
	// step the next take fills.
	first, next int
	// served is the trained policy new groups play with; version its
	// version. fullWeights: the weights of version are served.
	served  string
	version int
	// seq counts the groups started; live are those in flight, by id;
	// ready the judged ones not yet taken, in completion order.
	seq   int
	live  map[string]*streamGroup
	ready []*streamGroup
	// cur is the adaptive sampler's statistics the stream draws from
	// (a copy of the loop's after its newest written batch).
	cur *curriculum.State
	// series are the series in flight (series training; nil otherwise),
	// league the league the groups draw from (nil without league roles).
	series *streamSeries
	league *streamLeague
	// retired are adapters no longer served, unloaded once no group in
	// flight plays them; unloading those being unloaded, each closed when
	// its unload has returned (a load of the same name waits for it).
	retired   map[string]bool
	unloading map[string]chan struct{}
	// cancelled and dropped count the groups cancelled in flight and
	// dropped once judged, for the next step's metrics.
	cancelled, dropped int
	// lastTaken is how many groups the last take took; taking how many
	// the take in progress has taken so far, and need how many more it
	// may still take (0 when none is in progress).
	lastTaken, taking, need int
	runErr                  error
	runSum                  rollout.Summary
	// since is when the last take returned; snap the routing counters
	// then (routed false when the policy does not route).
	since  time.Time
	snap   rollout.RoutingSnap
	routed bool
}

// streamGroup is one group of the stream.
type streamGroup struct {
	id      string
	model   string
	version int
	cancel  context.CancelFunc
	played  []rollout.Played
	// members are the adapters of the league members the group plays.
	members []string
	// slot is the series slot whose game the group plays (-1: none), after
	// the slot's cursor once the game ended.
	slot  int
	after *SeriesCursor
	// Once judged:
	rs          []dataset.Rollout
	stats       reward.ScoreStats
	informative bool
	// resumed: read from the journal (finished before a crash).
	resumed bool
}

// startStream starts the stream for the steps from first on, the policy
// now served (state) playing the first groups.
func (l *Loop) startStream(ctx context.Context, first int) (*stream, error) {
	s := &stream{
		l: l, first: first, next: first, version: l.state.PolicyVersion,
		live: map[string]*streamGroup{}, retired: map[string]bool{}, unloading: map[string]chan struct{}{}, done: make(chan struct{}),
		sem: make(chan struct{}, max(1, (l.opts.JudgeConcurrency+l.opts.Rollout.GroupSize-1)/max(1, l.opts.Rollout.GroupSize))),
	}
	s.cond = sync.NewCond(&s.mu)
	if l.cur != nil {
		s.cur = l.cur.Clone()
	}
	model, err := l.servePolicy(ctx, first)
	if err != nil {
		return nil, err
	}
	s.served = model
	ro := l.opts.Rollout
	if model != "" {
		ro.Model = model
	}
	ro.Step, ro.PolicyVersion, ro.RunID, ro.Seed = first, s.version, l.opts.RunID, l.opts.Seed
	if l.opts.Weights != nil {
		ro.WeightVersion = s.servedVersion
	}
	if s.runner, err = rollout.NewRunner(ro); err != nil {
		return nil, err
	}
	n, cursors, err := s.resumeGroups()
	if err != nil {
		return nil, err
	}
	if l.opts.Series != nil {
		if err := s.startSeries(cursors); err != nil {
			return nil, err
		}
	}
	if len(l.opts.League) > 0 {
		s.league = newStreamLeague(l.league)
	}
	if n > 0 {
		l.log.Info("resuming the groups the stream journal holds finished and not yet in a batch", zap.Int("groups", n), zap.String("journal", l.opts.Dir.StreamJournalPath()))
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.since = time.Now()
	s.snap, s.routed = rollout.SnapRouting(ctx, ro.Policy, l.log)
	go s.run()
	return s, nil
}

// servePolicy makes the endpoints serve the policy of the run's state
// before sampling step (its adapter loaded again, or its weights synced:
// a restarted server or a resumed run no longer has them) and returns its
// model name, "" for the base model or full weights.
func (l *Loop) servePolicy(ctx context.Context, step int) (string, error) {
	if l.opts.Weights != nil {
		dir, err := l.policyWeights(l.state.PolicyVersion)
		if err != nil {
			return "", err
		}
		if _, err := l.opts.Weights.Sync(ctx, l.state.PolicyVersion, dir); err != nil {
			return "", fmt.Errorf("train.Loop step %d: before sampling with policy version %d: %w", step, l.state.PolicyVersion, err)
		}
		return "", nil
	}
	name := l.state.Adapter
	if name == "" {
		return "", nil
	}
	dir, err := l.trainedAdapter(l.state.PolicyVersion)
	if err != nil {
		return "", err
	}
	if err := l.opts.Adapters.LoadLoRA(ctx, name, dir); err != nil {
		return "", fmt.Errorf("train.Loop step %d: load adapter %s: %w", step, name, err)
	}
	return name, nil
}

// run plays groups until the stream is stopped or fails.
func (s *stream) run() {
	defer close(s.done)
	sum, err := s.runner.RunSource(s.ctx, s.nextGroup, s.sink)
	s.judges.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runSum = sum
	if err == nil && s.ctx.Err() == nil {
		err = errors.New("the stream of groups ended")
	}
	s.runErr = err
	s.cond.Broadcast()
}

// stop cancels the groups in flight and waits for the runner.
func (s *stream) stop() {
	s.cancel()
	<-s.done
}

// setCurriculum gives the stream the sampler's statistics after a
// written batch.
func (s *stream) setCurriculum(cur *curriculum.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = cur
}

// servedVersion is the version of the policy served now.
func (s *stream) servedVersion() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// bound is the oldest policy version step's batch may train.
func (s *stream) bound(step int) int {
	k := s.l.opts.MaxStaleness
	if m := s.l.opts.MaxOffPolicySteps; m > 0 {
		k = min(k, m)
	}
	return step - 1 - k
}

// room reports whether a new group may start: whether the groups in
// flight and judged but not taken (those known not to teach aside, under
// dynamic sampling) all fit the batches the served policy may still fill
// within the staleness bound. Called with mu held.
func (s *stream) room() bool {
	// Groups the next batch will drop as stale do not count. A step takes
	// B groups, or under dynamic sampling as many as the last step took
	// (the groups of equal rewards with the informative ones).
	oldest := s.bound(s.next)
	queued := 0
	for _, g := range s.live {
		if g.version >= oldest {
			queued++
		}
	}
	for _, g := range s.ready {
		if g.version >= oldest {
			queued++
		}
	}
	// The groups the take in progress has taken fill the step too.
	queued += s.taking
	perStep := max(s.l.opts.PromptsPerStep, s.lastTaken)
	// The served version may fill the batches up to version+1+k.
	last := s.version + 1 + s.l.opts.MaxStaleness
	if m := s.l.opts.MaxOffPolicySteps; m > 0 {
		last = s.version + 1 + min(s.l.opts.MaxStaleness, m)
	}
	// A take waiting for groups always gets them, whatever the estimate.
	waiting := len(s.live)+len(s.ready) < s.need
	return waiting || s.next+queued/perStep <= last
}

// nextGroup is the stream's rollout.GroupSource: it waits for room, then
// starts a group of the next prompt row with the policy served now.
func (s *stream) nextGroup(ctx context.Context, _ int) (rollout.Group, bool, error) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !(s.room() && (s.series == nil || s.series.freeSlot() >= 0)) && ctx.Err() == nil {
		s.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return rollout.Group{}, false, err
	}
	g := &streamGroup{id: rollout.GroupID(s.first, s.seq), model: s.served, version: s.version, slot: -1}
	grp := rollout.Group{ID: g.id, Model: g.model, PolicyVersion: g.version}
	if s.series != nil {
		job, err := s.seriesGroup(s.series.freeSlot(), g)
		if err != nil {
			return rollout.Group{}, false, err
		}
		grp.Prompt, grp.State = job.Prompt, job
	} else {
		b := s.l.opts.PromptsPerStep
		// Rows are drawn B at a time by the curriculum's seeded draw, a
		// block per B groups, the blocks of this session after those any
		// earlier session of the run could have drawn.
		block := s.first*1_000_000 + s.seq/b
		grp.Prompt = s.l.drawRows(s.cur, b, rollout.DeriveSeed(s.l.opts.Seed, "stream", 0), block)[s.seq%b]
	}
	if s.league != nil {
		players, err := s.drawPlayers(ctx, s.seq)
		if err != nil {
			s.seriesCancelled(g)
			return rollout.Group{}, false, err
		}
		grp.Players = players
		for _, p := range players {
			if p.Model != "" {
				g.members = append(g.members, p.Model)
			}
		}
	}
	s.seq++
	gctx, cancel := context.WithCancel(ctx)
	g.cancel = cancel
	grp.Ctx = gctx
	s.live[g.id] = g
	return grp, true, nil
}

// sink takes each finished rollout; a group complete is judged.
func (s *stream) sink(p rollout.Played) error {
	s.mu.Lock()
	g, ok := s.live[p.Rollout.GroupID]
	if !ok { // cancelled
		s.mu.Unlock()
		return nil
	}
	g.played = append(g.played, p)
	complete := len(g.played) == s.l.opts.Rollout.GroupSize
	if complete {
		delete(s.live, g.id)
		g.cancel()
		if g.slot >= 0 {
			s.seriesEnded(g)
		}
		s.unloadRetired()
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	if !complete {
		return nil
	}
	s.judges.Add(1)
	go func() {
		defer s.judges.Done()
		select {
		case s.sem <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		defer func() { <-s.sem }()
		g.rs = make([]dataset.Rollout, len(g.played))
		for i, p := range g.played {
			g.rs[i] = *p.Rollout
		}
		sort.Slice(g.rs, func(i, j int) bool { return g.rs[i].RolloutID < g.rs[j].RolloutID })
		g.stats, g.informative = s.l.judgeGroup(s.ctx, g.rs, nil)
		if s.ctx.Err() != nil {
			return
		}
		err := s.journalGroup(g)
		s.mu.Lock()
		if err != nil {
			s.runErr = err
			s.cancel()
		} else {
			s.ready = append(s.ready, g)
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	return nil
}

// serve makes the stream's new groups play the policy trained on step,
// served as model ("" for full weights). The adapter it replaces is
// unloaded once no group in flight plays it.
func (s *stream) serve(model string, step int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served != "" && s.served != model {
		s.retired[s.served] = true
	}
	s.served, s.version = model, step
	s.unloadRetired()
	s.cond.Broadcast()
}

// unloadRetired unloads, in the background, the retired adapters no
// group in flight plays (a league member's is kept). Called with mu held.
func (s *stream) unloadRetired() {
	for name := range s.retired {
		if s.playing(name) || s.leagueHolds(name) {
			continue
		}
		delete(s.retired, name)
		s.unloadLater(name, "unload of a retired adapter failed")
	}
}

// unloadLater unloads adapter name in the background, logging failed
// when it fails; a load of the same name waits for it (drawPlayers).
// Called with mu held.
func (s *stream) unloadLater(name, failed string) {
	done := make(chan struct{})
	s.unloading[name] = done
	go func() {
		defer close(done)
		if err := s.l.opts.Adapters.UnloadLoRA(s.ctx, name); err != nil && s.ctx.Err() == nil {
			s.l.log.Warn(failed, zap.String("adapter", name), zap.Error(err))
		}
		s.mu.Lock()
		if s.unloading[name] == done {
			delete(s.unloading, name)
		}
		s.mu.Unlock()
	}()
}

// playing reports whether a group in flight plays model, as its policy
// or a league member. Called with mu held.
func (s *stream) playing(model string) bool {
	for _, g := range s.live {
		if g.model == model || slices.Contains(g.members, model) {
			return true
		}
	}
	return false
}

// take waits for step's groups and returns them as the step's sampling:
// the first PromptsPerStep judged groups in completion order whose policy
// the step may train (with dynamic sampling: the first informative ones,
// with the others ready before them, at most OversampleMax·PromptsPerStep
// groups), the rollouts stamped with step.
func (s *stream) take(ctx context.Context, step int) (sampled, error) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	s.next = step
	b := s.l.opts.PromptsPerStep
	limit := b
	if s.l.opts.DynamicSampling {
		limit = max(b, int(math.Floor(max(s.l.opts.OversampleMax, 1)*float64(b))))
	}
	var taken []*streamGroup
	informative := 0
	enough := func() bool {
		if s.l.opts.DynamicSampling {
			return informative >= b || len(taken) >= limit
		}
		return len(taken) >= b
	}
	for {
		s.dropStale(step)
		for len(s.ready) > 0 && !enough() {
			g := s.ready[0]
			s.ready = s.ready[1:]
			taken = append(taken, g)
			if g.informative {
				informative++
			}
		}
		s.taking = len(taken)
		if s.l.opts.DynamicSampling {
			s.need = min(limit-len(taken), b-informative)
		} else {
			s.need = b - len(taken)
		}
		if enough() {
			break
		}
		if s.runErr != nil {
			return sampled{}, fmt.Errorf("train.Loop step %d: sampling: %w", step, s.runErr)
		}
		if err := ctx.Err(); err != nil {
			return sampled{}, fmt.Errorf("train.Loop step %d: %w", step, err)
		}
		// Groups dropped as stale leave room for new ones.
		s.cond.Broadcast()
		s.cond.Wait()
	}
	s.next, s.lastTaken, s.taking, s.need = step+1, len(taken), 0, 0
	var lg *league.State
	if s.league != nil {
		newest := s.version
		if len(taken) > 0 {
			newest = 0
			for _, g := range taken {
				newest = max(newest, g.version)
			}
		}
		lg = s.takeLeague(step, newest, taken)
	}
	s.cond.Broadcast()
	cancelled, dropped := s.cancelled, s.dropped
	s.cancelled, s.dropped = 0, 0
	s.mu.Unlock()
	locked = false
	crashpoint.Hit("stream-taken") // groups taken from the stream, nothing of the step written
	out := s.sampled(ctx, step, taken, informative, cancelled, dropped)
	out.league = lg
	return out, nil
}

// dropStale cancels the groups in flight and drops the judged ones whose
// policy is older than step's batch may train. Called with mu held.
func (s *stream) dropStale(step int) {
	oldest := s.bound(step)
	for id, g := range s.live {
		if g.version < oldest {
			g.cancel()
			delete(s.live, id)
			s.seriesCancelled(g)
			s.cancelled++
		}
	}
	kept := s.ready[:0]
	for _, g := range s.ready {
		if g.version < oldest {
			s.dropped++
			// Without its file the journal's line is a group dropped.
			if err := os.Remove(s.l.opts.Dir.StreamGroupPath(g.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.l.log.Warn("removing a stale group's file", zap.String("group", g.id), zap.Error(err))
			}
			continue
		}
		kept = append(kept, g)
	}
	s.ready = kept
	s.unloadRetired()
}

// sampled is step's sampling made of the groups taken: their rollouts
// stamped with step in group order, their summary since the last take
// (routing counters included), their judging and the step's stream
// metrics, cancelled and dropped counting the stale groups since the last
// take. Called by take alone, without mu: the groups taken are its own.
func (s *stream) sampled(ctx context.Context, step int, taken []*streamGroup, informative, cancelled, dropped int) sampled {
	out := sampled{pv: math.MaxInt, pre: &preJudged{untrained: map[string]bool{}}}
	var sum rollout.Summary
	trained, newest, resumed := 0, 0, 0
	for _, g := range taken {
		if g.resumed {
			resumed++
		}
		out.pv, newest = min(out.pv, g.version), max(newest, g.version)
		addScoreStats(&out.pre.stats, g.stats)
		if s.l.opts.DynamicSampling && g.informative {
			if trained < s.l.opts.PromptsPerStep {
				trained++
			} else {
				out.pre.untrained[g.id] = true
			}
		} else if !s.l.opts.DynamicSampling {
			trained++
		}
		for i := range g.rs {
			g.rs[i].Step = int32(step)
			out.rs = append(out.rs, g.rs[i])
		}
		for _, p := range g.played {
			sum.Count(p)
		}
	}
	if len(taken) == 0 {
		out.pv = s.servedVersion()
		newest = out.pv
	}
	sort.Slice(out.rs, func(i, j int) bool { return out.rs[i].RolloutID < out.rs[j].RolloutID })
	now := time.Now()
	sum.Finish(now.Sub(s.since))
	if s.routed {
		snap, _ := rollout.SnapRouting(ctx, s.l.opts.Rollout.Policy, s.l.log)
		sum.AddRouting(s.snap, snap, s.l.log)
		s.snap = snap
	}
	out.sum, out.seconds, s.since = sum, now.Sub(s.since).Seconds(), now
	b := s.l.opts.PromptsPerStep
	out.pre.metrics = metrics.Line{
		metrics.KeyGroupsSampled: len(taken), metrics.KeyGroupsInformative: informative, metrics.KeyGroupsTrained: trained,
		metrics.KeyOversampleRatio:      float64(len(taken)) / float64(b),
		metrics.KeyGroupsCancelledStale: cancelled, metrics.KeyGroupsDroppedStale: dropped, metrics.KeyGroupsResumed: resumed,
		metrics.KeyPolicyVersionMax: newest,
	}
	if s.l.opts.DynamicSampling && informative < b {
		s.l.log.Warn("dynamic sampling: the step reached train.oversample_max with fewer informative groups than rollout.prompts_per_step; training those it has",
			zap.Int("step", step), zap.Int("groups_sampled", len(taken)), zap.Int("groups_informative", informative), zap.Int("groups_wanted", b),
			zap.String("if_every_step", "a judge that gives every completion one score, or a curriculum whose prompts the policy has solved or cannot move on"))
	}
	return out
}
