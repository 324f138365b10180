package train

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/stats"
	"go.uber.org/zap"
)

// AuditOptions configure the audit judge of the loop (config judge.audit):
// a second judge that scores a seeded sample of each step's judged final
// completions beside training.
//
// An audit runs in the loop's background, one step at a time, in step
// order: the loop only queues the step once its batch is written, and
// never waits for it. Its record is written atomically to
// RUN/audit/step-N.json, then its line is appended to metrics.jsonl
// ({"step": N, "kind": "audit", "audit/…": …}). The audit judge's
// failures are counted in the record and warned once per cause; they never
// fail the step. A run that resumes audits the written steps that have no
// record (reading their rollouts back), and appends the line of a record
// whose line is missing.
type AuditOptions struct {
	// Judge is the audit judge; nil audits nothing.
	Judge reward.Judge
	// Share is the share of a step's judged rollouts audited (at least
	// one), drawn with Seed and the step.
	Share float64
	Seed  int64
	// Concurrency bounds the audit judge's requests in flight (0: 1).
	Concurrency int
	// Levels is the top of the score scale (scores are 1..Levels; 0: the
	// rubric's 5).
	Levels int
	// Window and Threshold are the over-optimisation alarm's (config
	// judge.audit.alarm_window and alarm_threshold).
	Window    int
	Threshold float64
	// Drain bounds the wait for the audits still queued when training is
	// done (0: DefaultAuditDrain); those left are audited on resume.
	Drain time.Duration
	// OnAudit, if set, is called with each audit's metrics line, from the
	// audit's goroutine.
	OnAudit func(m map[string]any)
}

// DefaultAuditDrain is AuditOptions.Drain's default.
const DefaultAuditDrain = 2 * time.Minute

// AuditItem is one audited rollout: the training judge's score (from the
// step's rollouts) and the audit judge's, or the audit judge's failure.
type AuditItem struct {
	RolloutID  string   `json:"rollout_id"`
	TrainScore float64  `json:"train_score"`
	AuditScore *float64 `json:"audit_score,omitempty"`
	Rationale  string   `json:"rationale,omitempty"`
	// Cause names the audit judge's failure (chat.Cause), Error says it.
	Cause string `json:"cause,omitempty"`
	Error string `json:"error,omitempty"`
}

// AuditRecord is RUN/audit/step-N.json: a step's audit.
type AuditRecord struct {
	Step  int         `json:"step"`
	Judge string      `json:"judge"`
	Items []AuditItem `json:"items"`
	// Agreement is over the items both judges scored (nil: none).
	Agreement *stats.Agreement `json:"agreement,omitempty"`
	// TrainMean and AuditMean are the two judges' mean scores on those
	// items.
	TrainMean float64 `json:"train_mean"`
	AuditMean float64 `json:"audit_mean"`
	// Alarm is set when the over-optimisation alarm fires at the step.
	Alarm bool `json:"alarm"`
}

// line is the record's metrics.jsonl line.
func (r AuditRecord) line() metrics.Line {
	m := metrics.Line{metrics.KeyStep: r.Step, metrics.KeyKind: metrics.AuditKind,
		metrics.KeyAuditSampled: len(r.Items), metrics.KeyAuditAlarm: 0}
	scored := 0
	for _, it := range r.Items {
		if it.AuditScore != nil {
			scored++
		}
	}
	m[metrics.KeyAuditScored] = scored
	m[metrics.KeyAuditFailed] = len(r.Items) - scored
	if r.Alarm {
		m[metrics.KeyAuditAlarm] = 1
	}
	if a := r.Agreement; a != nil {
		m[metrics.KeyAuditExact] = a.Exact
		m[metrics.KeyAuditWithinOne] = a.WithinOne
		if a.Pearson != nil {
			m[metrics.KeyAuditPearson] = *a.Pearson
		}
		if a.Kappa != nil {
			m[metrics.KeyAuditKappa] = *a.Kappa
		}
		m[metrics.KeyAuditTrainScoreMean] = r.TrainMean
		m[metrics.KeyAuditScoreMean] = r.AuditMean
	}
	return m
}

// auditPoint is an audited step's two means, for the alarm.
type auditPoint struct {
	step            int
	train, audit    float64
	hasMeans, fired bool
}

// OverOptimised reports whether the over-optimisation alarm fires on a
// window of audited steps, oldest first: the training judge's mean score
// over the newer half is at least threshold above its mean over the older
// half, while the audit judge's is at least threshold below. A window of
// fewer than 2 points, or of an odd number, never fires.
func OverOptimised(train, audit []float64, threshold float64) bool {
	n := len(train)
	if n < 2 || n%2 != 0 || len(audit) != n {
		return false
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	h := n / 2
	dTrain := mean(train[h:]) - mean(train[:h])
	dAudit := mean(audit[h:]) - mean(audit[:h])
	const eps = 1e-9 // a move of exactly the threshold fires, whatever the rounding
	return dTrain >= threshold-eps && dAudit <= -threshold+eps
}

// auditRunner runs the loop's audits, one step at a time, in its own
// goroutine: queueing never blocks the loop, and the runner touches
// nothing of the loop's state but the metrics file, under metricsMu.
type auditRunner struct {
	l      *Loop
	opts   AuditOptions
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	queued map[int]bool
	jobs   []int // the written steps to audit, in order
	wake   chan struct{}
	closed bool
	hist   []auditPoint   // audited steps, ascending (the worker's)
	causes map[string]int // failures by cause, over the run (the worker's)
}

// startAudits starts the audit runner of a Run: it appends the lines of
// records whose line is missing, reads the audited steps' means for the
// alarm, and queues the written steps that have no record. Without an
// audit judge it returns a runner that does nothing.
func (l *Loop) startAudits(ctx context.Context) (*auditRunner, error) {
	o := l.opts.Audit
	au := &auditRunner{l: l, opts: o, done: make(chan struct{}), queued: map[int]bool{}, wake: make(chan struct{}, 1), causes: map[string]int{}}
	if o.Judge == nil {
		close(au.done)
		au.cancel = func() {}
		return au, nil
	}
	steps, err := stepFiles(l.opts.Dir.AuditDir(), ".json")
	if err != nil {
		return nil, fmt.Errorf("train.Loop: audits: %w", err)
	}
	for _, s := range steps {
		rec, err := readAuditRecord(l.opts.Dir.AuditPath(s))
		if err != nil {
			// A damaged record is audited again.
			l.log.Warn("audit record unreadable; the step will be audited again", zap.Int("step", s), zap.Error(err))
			if rerr := os.Remove(l.opts.Dir.AuditPath(s)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return nil, fmt.Errorf("train.Loop: %w", rerr)
			}
			continue
		}
		au.hist = append(au.hist, rec.point())
		if err := l.appendAuditLine(rec); err != nil {
			return nil, err
		}
	}
	actx, cancel := context.WithCancel(ctx)
	au.cancel = cancel
	go au.work(actx)
	written, err := stepFiles(l.opts.Dir.BatchesDir(), dataset.ReadyExt)
	if err != nil {
		return nil, fmt.Errorf("train.Loop: audits: %w", err)
	}
	for _, s := range written {
		au.queue(s)
	}
	return au, nil
}

// stepFiles lists the steps of dir's step-N<ext> files, ascending; a
// missing dir has none.
func stepFiles(dir, ext string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ext)
		if !ok {
			continue
		}
		if n, ok := dataset.ParseStepName(name); ok {
			steps = append(steps, n)
		}
	}
	slices.Sort(steps)
	return steps, nil
}

// readAuditRecord reads RUN/audit/step-N.json.
func readAuditRecord(path string) (AuditRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return AuditRecord{}, err
	}
	var rec AuditRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return AuditRecord{}, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// point is the record's means for the alarm.
func (r AuditRecord) point() auditPoint {
	return auditPoint{step: r.Step, train: r.TrainMean, audit: r.AuditMean, hasMeans: r.Agreement != nil, fired: r.Alarm}
}

// appendAuditLine appends rec's line to metrics.jsonl unless it is there,
// and queues it for the trainer's reporters (TensorBoard, W&B) in the next
// written batch's sidecar, as an evaluation's.
func (l *Loop) appendAuditLine(rec AuditRecord) error {
	l.metricsMu.Lock()
	defer l.metricsMu.Unlock()
	if l.auditRecorded[rec.Step] {
		return nil
	}
	line := rec.line()
	if err := AppendMetrics(l.opts.Dir.MetricsPath(), line); err != nil {
		return err
	}
	l.auditRecorded[rec.Step] = true
	// TensorBoard and W&B get it at the audited step, as an evaluation.
	l.evalsUnsent = append(l.evalsUnsent, pastStepReport(rec.Step, line, metrics.AuditPrefix))
	return nil
}

// queue queues step's audit when it has no record. It never blocks.
func (au *auditRunner) queue(step int) {
	if au.opts.Judge == nil {
		return
	}
	if _, err := os.Stat(au.l.opts.Dir.AuditPath(step)); err == nil {
		return
	}
	au.mu.Lock()
	if !au.queued[step] {
		au.queued[step] = true
		au.jobs = append(au.jobs, step)
	}
	au.mu.Unlock()
	select {
	case au.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued step; ok is false once the queue is closed
// and empty.
func (au *auditRunner) next(ctx context.Context) (int, bool) {
	for {
		au.mu.Lock()
		if len(au.jobs) > 0 {
			j := au.jobs[0]
			au.jobs = au.jobs[1:]
			au.mu.Unlock()
			return j, true
		}
		closed := au.closed
		au.mu.Unlock()
		if closed {
			return 0, false
		}
		select {
		case <-au.wake:
		case <-ctx.Done():
			return 0, false
		}
	}
}

// finish ends the runner. After a run that succeeded it waits for the
// queued audits, at most Drain; after a failure it cancels them. A resumed
// run audits what is left. It returns runErr.
func (au *auditRunner) finish(runErr error) error {
	au.mu.Lock()
	au.closed = true
	left := len(au.jobs)
	au.mu.Unlock()
	select {
	case au.wake <- struct{}{}:
	default:
	}
	if runErr != nil {
		au.cancel()
	} else if left > 0 {
		au.l.log.Info("training done; waiting for the audits still queued", zap.Int("queued", left))
	}
	drain := au.opts.Drain
	if drain <= 0 {
		drain = DefaultAuditDrain
	}
	select {
	case <-au.done:
	case <-time.After(drain):
		au.cancel()
		<-au.done
		au.mu.Lock()
		left = len(au.jobs)
		au.mu.Unlock()
		au.l.log.Warn("audits not finished when training was done; parley train --resume audits the steps left",
			zap.Duration("waited", drain), zap.Int("queued", left))
	}
	au.cancel()
	return runErr
}

// work runs the queued audits in order until the queue is closed and
// empty, or ctx ends.
func (au *auditRunner) work(ctx context.Context) {
	defer close(au.done)
	for {
		step, ok := au.next(ctx)
		if !ok || ctx.Err() != nil {
			return
		}
		if err := au.run(ctx, step); err != nil && ctx.Err() == nil {
			au.l.log.Warn("audit failed; parley train --resume audits the step again", zap.Int("step", step), zap.Error(err))
		}
	}
}

// run audits one step: it draws the sample from the step's written
// rollouts, has the audit judge score it, writes the record and then the
// metrics line.
func (au *auditRunner) run(ctx context.Context, step int) error {
	l := au.l
	rs, err := dataset.ReadAllRollouts(l.opts.Dir.RolloutsPath(step))
	if err != nil {
		return fmt.Errorf("train.Loop step %d: audit: %w", step, err)
	}
	sample := auditSample(rs, au.opts.Share, au.opts.Seed, step)
	if len(sample) == 0 {
		return nil // nothing judged: nothing to audit
	}
	outs := judgeEach(ctx, au.opts.Judge, sample, au.opts.Concurrency)
	if err := ctx.Err(); err != nil {
		return err
	}
	rec := AuditRecord{Step: step, Judge: au.opts.Judge.Name()}
	levels := cmp.Or(au.opts.Levels, 5)
	var xs, ys []int
	var sumT, sumA float64
	for i, o := range outs {
		it := AuditItem{RolloutID: sample[i].RolloutID, TrainScore: float64(sample[i].Score)}
		if o.err != nil {
			it.Cause, it.Error = chat.Cause(o.err), o.err.Error()
			au.failed(step, it.Cause, o.err)
		} else {
			s := o.res.Score
			it.AuditScore, it.Rationale = &s, o.res.Rationale
			a, b := int(math.Round(it.TrainScore)), int(math.Round(s))
			if a >= 1 && a <= levels && b >= 1 && b <= levels {
				xs, ys = append(xs, a), append(ys, b)
				sumT += it.TrainScore
				sumA += s
			}
		}
		rec.Items = append(rec.Items, it)
	}
	if len(xs) > 0 {
		ag, err := stats.Agree(xs, ys, levels)
		if err != nil {
			return fmt.Errorf("train.Loop step %d: audit: %w", step, err)
		}
		rec.Agreement = &ag
		rec.TrainMean, rec.AuditMean = sumT/float64(len(xs)), sumA/float64(len(xs))
		rec.Alarm = au.alarm(rec.point())
	}
	crashpoint.Hit("audit-judged") // scored, nothing written
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("train.Loop step %d: audit: %w", step, err)
	}
	if err := os.MkdirAll(l.opts.Dir.AuditDir(), 0o755); err != nil {
		return fmt.Errorf("train.Loop step %d: audit: %w", step, err)
	}
	if err := fsutil.WriteFileAtomic(l.opts.Dir.AuditPath(step), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("train.Loop step %d: audit: %w", step, err)
	}
	au.hist = insertPoint(au.hist, rec.point())
	crashpoint.Hit("after-audit-file") // the record written, its line not
	if err := l.appendAuditLine(rec); err != nil {
		return fmt.Errorf("train.Loop step %d: audit: %w", step, err)
	}
	line := rec.line()
	l.log.Info("audit done", zap.Int("step", step), zap.Any("scored", line[metrics.KeyAuditScored]),
		zap.Any("failed", line[metrics.KeyAuditFailed]), zap.Any("exact", line[metrics.KeyAuditExact]),
		zap.Any("train_score_mean", line[metrics.KeyAuditTrainScoreMean]), zap.Any("audit_score_mean", line[metrics.KeyAuditScoreMean]))
	if au.opts.OnAudit != nil {
		au.opts.OnAudit(line.Strings())
	}
	return nil
}

// failed counts an audit judge failure by cause and warns on the first of
// each cause.
func (au *auditRunner) failed(step int, cause string, err error) {
	au.causes[cause]++
	if au.causes[cause] == 1 {
		au.l.log.Warn("the audit judge failed; training goes on, the audit counts its failures (warned once per cause)",
			zap.Int("step", step), zap.String("cause", cause), zap.Error(err))
	}
}

// alarm reports whether the alarm fires with p as the newest audited
// step, and warns when it starts firing.
func (au *auditRunner) alarm(p auditPoint) bool {
	w := au.opts.Window
	var train, audit []float64
	prev := false
	for _, q := range au.hist {
		if q.step >= p.step || !q.hasMeans {
			continue
		}
		prev = q.fired
		train, audit = append(train, q.train), append(audit, q.audit)
	}
	train, audit = append(train, p.train), append(audit, p.audit)
	if len(train) < w {
		return false
	}
	train, audit = train[len(train)-w:], audit[len(audit)-w:]
	fire := OverOptimised(train, audit, au.opts.Threshold)
	if fire && !prev {
		au.l.log.Warn("over-optimisation alarm: the training judge's reward rises while the audit judge's falls",
			zap.Int("step", p.step), zap.Int("window", w), zap.Float64("threshold", au.opts.Threshold),
			zap.Float64s("train_means", train), zap.Float64s("audit_means", audit))
	}
	return fire
}

// insertPoint puts p into hist (ascending by step), replacing a point of
// the same step.
func insertPoint(hist []auditPoint, p auditPoint) []auditPoint {
	i, found := slices.BinarySearchFunc(hist, p.step, func(q auditPoint, s int) int { return cmp.Compare(q.step, s) })
	if found {
		hist[i] = p
		return hist
	}
	return slices.Insert(hist, i, p)
}

// auditSample draws the audited rollouts of a step: share of its judged
// rollouts (at least one), by seed and step, in RolloutID order.
func auditSample(rs []dataset.Rollout, share float64, seed int64, step int) []*dataset.Rollout {
	var pool []*dataset.Rollout
	for i := range rs {
		if rs[i].Judged && !rs[i].Failed {
			pool = append(pool, &rs[i])
		}
	}
	slices.SortFunc(pool, func(a, b *dataset.Rollout) int { return strings.Compare(a.RolloutID, b.RolloutID) })
	n := min(len(pool), max(1, int(math.Round(share*float64(len(pool))))))
	if len(pool) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(step)))
	idx := rng.Perm(len(pool))[:n]
	slices.Sort(idx)
	out := make([]*dataset.Rollout, n)
	for k, i := range idx {
		out[k] = pool[i]
	}
	return out
}

// verdict is one rollout's verdict or failure.
type verdict struct {
	res reward.Result
	err error
}

// judgeEach has j judge each rollout, at most concurrency at once, and
// returns the verdicts in order.
func judgeEach(ctx context.Context, j reward.Judge, rs []*dataset.Rollout, concurrency int) []verdict {
	concurrency = max(concurrency, 1)
	outs := make([]verdict, len(rs))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := j.Judge(ctx, r)
			outs[i] = verdict{res, err}
		}()
	}
	wg.Wait()
	return outs
}
