package train

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// DefaultOversampleMax is the most groups dynamic sampling plays in a step,
// per group its batch asks for (train.oversample_max).
const DefaultOversampleMax = 3.0

// dynamicSampler is the rollout.GroupSource of a step under dynamic
// sampling (DAPO): it yields the step's prompt rows (the same draw as
// without it), judges each group as soon as its G rollouts are in, and
// while fewer than B groups are informative (some advantage not zero) it
// yields further rows, in rounds, until B are or the step has played
// OversampleMax·B groups. A round starts once every group before it is
// judged and is sized by the share of informative groups so far, so the
// groups a step plays depend on the judge's verdicts, never on timing: a
// step sampled again after a crash plays the same groups.
type dynamicSampler struct {
	l     *Loop
	step  int
	b     int // groups the batch asks for
	limit int // groups the step may play

	mu   sync.Mutex
	cond *sync.Cond
	// pending are the current round's rows not yet yielded; rounds counts
	// the rounds begun.
	pending []dataset.Prompt
	rounds  int
	// launched groups were yielded; judged of them are judged, informative
	// of those have an advantage.
	launched, judged, informative int
	// groups holds each group's rollouts by its index, as they arrive.
	groups map[int][]dataset.Rollout
	// isInformative records the verdict of each judged group by index.
	isInformative map[int]bool
	stats         reward.ScoreStats
	wg            sync.WaitGroup
	sem           chan struct{}
	onJudged      func()
}

// newDynamicSampler returns step's sampler; onJudged ticks once per
// rollout judged.
func newDynamicSampler(l *Loop, step int, onJudged func()) *dynamicSampler {
	b := l.opts.PromptsPerStep
	ratio := l.opts.OversampleMax
	if ratio < 1 {
		ratio = DefaultOversampleMax
	}
	d := &dynamicSampler{
		l: l, step: step, b: b, limit: max(b, int(math.Floor(ratio*float64(b)))),
		groups: map[int][]dataset.Rollout{}, isInformative: map[int]bool{},
		// Groups judged at once: enough to keep the judge's calls in
		// flight (train.judge_concurrency) busy.
		sem:      make(chan struct{}, max(1, (l.opts.JudgeConcurrency+l.opts.Rollout.GroupSize-1)/max(1, l.opts.Rollout.GroupSize))),
		onJudged: onJudged,
	}
	d.cond = sync.NewCond(&d.mu)
	return d
}

// next is the sampler's rollout.GroupSource.
func (d *dynamicSampler) next(ctx context.Context, i int) (rollout.Group, bool, error) {
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.cond.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) == 0 {
		if d.rounds == 0 {
			d.pending = d.l.drawRows(d.l.cur, d.b, d.l.opts.Seed, d.step)
		} else {
			for d.judged < d.launched && ctx.Err() == nil {
				d.cond.Wait()
			}
			if err := ctx.Err(); err != nil {
				return rollout.Group{}, false, err
			}
			n := d.roundSize()
			if n == 0 {
				return rollout.Group{}, false, nil
			}
			d.pending = d.l.drawRows(d.l.cur, n, rollout.DeriveSeed(d.l.opts.Seed, "oversample", int64(d.rounds)), d.step)
		}
		d.rounds++
	}
	p := d.pending[0]
	d.pending = d.pending[1:]
	d.launched++
	return rollout.Group{Prompt: p}, true, nil
}

// roundSize is the number of groups the next round plays: none once B
// groups are informative or the step played its limit, else the groups
// still missing divided by the share of informative groups so far (at
// least 1/OversampleMax, so a round of none informative asks for the
// rest of the limit at most).
func (d *dynamicSampler) roundSize() int {
	need := d.b - d.informative
	left := d.limit - d.launched
	if need <= 0 || left <= 0 {
		return 0
	}
	// The rate num/den: the informative share so far, at least b/limit.
	num, den := d.informative, max(d.judged, 1)
	if num*d.limit < d.b*den {
		num, den = d.b, d.limit
	}
	return min(left, (need*den+num-1)/num)
}

// sink receives each finished rollout; a group complete is judged at once.
func (d *dynamicSampler) sink(ctx context.Context, r *dataset.Rollout) {
	idx := groupIndex(r.GroupID)
	d.mu.Lock()
	d.groups[idx] = append(d.groups[idx], *r)
	complete := len(d.groups[idx]) == d.l.opts.Rollout.GroupSize
	d.mu.Unlock()
	if !complete {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.sem <- struct{}{}
		defer func() { <-d.sem }()
		d.judgeGroup(ctx, idx)
	}()
}

// judgeGroup judges group idx, decides whether it is informative and
// wakes the round waiting for it.
func (d *dynamicSampler) judgeGroup(ctx context.Context, idx int) {
	d.mu.Lock()
	rs := d.groups[idx]
	d.mu.Unlock()
	st, informative := d.l.judgeGroup(ctx, rs, d.onJudged)
	d.mu.Lock()
	defer d.mu.Unlock()
	addScoreStats(&d.stats, st)
	d.judged++
	if informative {
		d.informative++
		d.isInformative[idx] = true
	}
	d.cond.Broadcast()
}

// result waits for the judging still running and returns the step's
// rollouts in group order, the judging counts, the groups kept out of the
// batch (informative beyond the first B) and the step's dynamic-sampling
// metrics.
func (d *dynamicSampler) result() ([]dataset.Rollout, reward.ScoreStats, map[string]bool, metrics.Line) {
	d.wg.Wait()
	idx := make([]int, 0, len(d.groups))
	for i := range d.groups {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var rs []dataset.Rollout
	untrained := map[string]bool{}
	trained := 0
	for _, i := range idx {
		g := d.groups[i]
		if d.isInformative[i] {
			if trained < d.b {
				trained++
			} else {
				untrained[g[0].GroupID] = true
			}
		}
		rs = append(rs, g...)
	}
	m := metrics.Line{
		metrics.KeyGroupsSampled: d.launched, metrics.KeyGroupsInformative: d.informative,
		metrics.KeyGroupsTrained: trained, metrics.KeyOversampleRatio: float64(d.launched) / float64(d.b),
	}
	return rs, d.stats, untrained, m
}

// judgeGroup judges one group's rollouts afresh (JudgeRollouts) and
// reports whether the group is informative: some advantage, as grpo
// computes it, is not zero.
func (l *Loop) judgeGroup(ctx context.Context, rs []dataset.Rollout, onJudged func()) (reward.ScoreStats, bool) {
	st, err := JudgeRollouts(ctx, l.opts.Judge, rs, l.opts.JudgeConcurrency, onJudged)
	if err != nil {
		return st, false
	}
	_, adv, err := grpo.ComputeAdvantages(rs, l.opts.Advantage, nil)
	return st, err == nil && adv.KeptGroups > 0
}

// addScoreStats adds the counts of st to dst.
func addScoreStats(dst *reward.ScoreStats, st reward.ScoreStats) { dst.Add(st) }

// groupIndex is the index i of a group id made by rollout.GroupID.
func groupIndex(groupID string) int {
	var step, i int
	if _, err := fmt.Sscanf(groupID, "s%06d-g%05d", &step, &i); err != nil {
		return -1
	}
	return i
}

// sampleDynamic plays step's groups under dynamic sampling
// (dynamicSampler), judging them as they complete: the sampling s is
// judged when it returns (s.pre).
func (l *Loop) sampleDynamic(ctx context.Context, runner *rollout.Runner, step int) ([]dataset.Rollout, rollout.Summary, *preJudged, error) {
	tick, end := l.progress(fmt.Sprintf("step %d rollouts", step), l.opts.PromptsPerStep*l.opts.Rollout.GroupSize)
	d := newDynamicSampler(l, step, nil)
	sum, err := runner.RunSource(ctx, d.next, func(p rollout.Played) error {
		d.sink(ctx, p.Rollout)
		tick()
		return nil
	})
	end(err != nil || ctx.Err() != nil)
	rs, st, untrained, m := d.result()
	if err != nil {
		return nil, sum, nil, err
	}
	if d.informative < d.b {
		l.log.Warn("dynamic sampling: the step reached train.oversample_max with fewer informative groups than rollout.prompts_per_step; training those it has",
			zap.Int("step", step), zap.Int("groups_sampled", d.launched), zap.Int("groups_informative", d.informative), zap.Int("groups_wanted", d.b),
			zap.String("if_every_step", "a judge that gives every completion one score, or a curriculum whose prompts the policy has solved or cannot move on"))
	}
	return rs, sum, &preJudged{stats: st, untrained: untrained, metrics: m}, nil
}

// preJudged is what dynamic sampling leaves for the judging phase: the
// step's rollouts are judged already.
type preJudged struct {
	stats     reward.ScoreStats
	untrained map[string]bool
	metrics   metrics.Line
}
