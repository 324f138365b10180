package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// EvalOptions configure the evaluations the loop runs while it trains
// (train.eval_every): every Every steps, the adapter of that step plays
// the held-out prompts against the base model under greedy decoding, the
// two final completions of each prompt are compared (in both orders for a
// pairwise judge), and each side's rollouts are scored pointwise.
//
// An evaluation runs in the loop's background, one at a time: the loop
// only queues the step and goes on training. Its result is written
// atomically to RUN/evals/step-N.json, then appended to metrics.jsonl as
// a line {"step": N, "kind": "eval", "eval/…": …}. A run that resumes
// evaluates the steps that should have an evaluation, have a DONE and
// have no file, and appends the line of a file whose line is missing; an
// evaluation interrupted before its file is written is redone.
type EvalOptions struct {
	// Every evaluates the adapter of every Every-th step (0: never).
	Every int
	// Prompts are the held-out prompts (the curriculum's eval split), which
	// both sides play in this order.
	Prompts []dataset.Prompt
	// Set names the prompts in results ("curriculum split eval").
	Set string
	// Game is the game both sides play, every role played by the side's
	// model; nil: the loop's (Rollout.Game).
	Game rollout.Game
	// Aspect compares the two sides' final completions: with an LLM judge
	// a reward.PairwiseJudge (asked in both orders), with a rule or a
	// game's scorer a harness.ScoreComparer (higher score wins).
	Aspect harness.Aspect
	// Scorer scores each side's rollouts pointwise for their mean score
	// (the run's reward judge); Scale is its scale, which labels it.
	Scorer reward.Judge
	Scale  dataset.ScoreScale
	// Decoding is the decoding both sides sample with (greedy:
	// harness.NewDecodings with report.DecodingGreedy).
	Decoding harness.Decoding
	// Concurrency bounds each side's rollouts in flight (default 8);
	// JudgeConcurrency the judge's calls (default 8).
	Concurrency, JudgeConcurrency int
	// OnEval, if set, is called with each evaluation's metrics line, from
	// the evaluation's goroutine.
	OnEval func(m map[string]any)
}

// EvalResult is one step's evaluation, as RUN/evals/step-N.json holds it.
type EvalResult struct {
	// EvalSetup is how the evaluation was made (its fields are the file's
	// top-level keys: step, base, set, prompts, decoding, comparison,
	// judge).
	report.EvalSetup
	// Adapter is the name the step's adapter was served under for the
	// evaluation; AdapterPath its folder.
	Adapter     string             `json:"adapter"`
	AdapterPath string             `json:"adapter_path"`
	Scale       dataset.ScoreScale `json:"scale"`
	// Result is the win rate of the trained side (left) against the base
	// (right); Comparisons the prompts compared, each with its verdicts.
	Result      report.PairwiseResult `json:"result"`
	Excluded    int                   `json:"excluded"`
	Trained     harness.SideStats     `json:"trained"`
	BaseSide    harness.SideStats     `json:"base_side"`
	Comparisons []harness.Comparison  `json:"comparisons"`
	Seconds     float64               `json:"seconds"`
}

// Metrics is the evaluation's line for metrics.jsonl.
func (r EvalResult) Metrics() map[string]any {
	m := metrics.Line{metrics.KeyStep: r.Step, metrics.KeyKind: metrics.EvalKind,
		metrics.KeyEvalExcluded: r.Excluded, metrics.KeyEvalPrompts: r.Prompts, metrics.KeyEvalSeconds: r.Seconds,
		metrics.KeyEvalAgreementRate: r.Trained.AgreementRate, metrics.KeyEvalBaseAgreementRate: r.BaseSide.AgreementRate,
	}
	if len(r.Result.Runs) > 0 {
		run := r.Result.Runs[0]
		m[metrics.KeyEvalWinRate], m[metrics.KeyEvalWins], m[metrics.KeyEvalTies], m[metrics.KeyEvalLosses] = run.WinRate, run.Wins, run.Ties, run.Losses
	}
	for k, p := range map[metrics.Key]*float64{
		metrics.KeyEvalScoreMean: r.Trained.ScoreMean, metrics.KeyEvalBaseScoreMean: r.BaseSide.ScoreMean,
		metrics.KeyEvalRoundsToAgreement: r.Trained.RoundsToAgreement, metrics.KeyEvalBaseRoundsToAgreement: r.BaseSide.RoundsToAgreement,
	} {
		if p != nil {
			m[k] = *p
		}
	}
	return m.Strings()
}

// ReadEval reads RUN/evals/step-N.json; ok is false when there is none.
func ReadEval(d dataset.RunDir, step int) (EvalResult, bool, error) {
	var r EvalResult
	b, err := os.ReadFile(d.EvalPath(step))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("train.ReadEval: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("train.ReadEval: %s: %w", d.EvalPath(step), err)
	}
	if r.Step != step {
		return r, false, fmt.Errorf("train.ReadEval: %s is for step %d", d.EvalPath(step), r.Step)
	}
	return r, true, nil
}

// evalJob is a step whose adapter is to be evaluated.
type evalJob struct {
	step       int
	name, path string // the adapter's name for the evaluation and its folder
}

// evaluator runs the loop's evaluations, one at a time, in its own
// goroutine: queueing never blocks the loop, and the evaluator touches
// nothing of the loop's state but the metrics file, under metricsMu.
type evaluator struct {
	l      *Loop
	opts   EvalOptions
	jobs   chan evalJob
	cancel context.CancelFunc
	done   chan struct{}
	queued map[int]bool // touched by the loop's goroutine only

	mu     sync.Mutex
	failed []int
}

// startEvals starts the evaluator of a Run: it appends the lines of
// evaluation files whose line is missing, and queues the steps already
// trained that should have an evaluation and have none. With Every 0 it
// only repairs lines, and returns an evaluator that queues nothing.
func (l *Loop) startEvals(ctx context.Context) (*evaluator, error) {
	if err := l.repairEvalLines(); err != nil {
		return nil, err
	}
	o := l.opts.Eval
	// One job per evaluable step at most: queueing never blocks.
	capacity := 0
	if o.Every > 0 {
		capacity = l.opts.Steps/o.Every + 1
	}
	ectx, cancel := context.WithCancel(ctx)
	ev := &evaluator{l: l, opts: o, jobs: make(chan evalJob, capacity), cancel: cancel, done: make(chan struct{}), queued: map[int]bool{}}
	go ev.work(ectx)
	for s := o.Every; o.Every > 0 && s <= l.state.Step; s += o.Every {
		if err := ev.queue(s); err != nil {
			l.log.Warn("the step's evaluation cannot run", zap.Int("step", s), zap.Error(err))
		}
	}
	return ev, nil
}

// repairEvalLines appends the metrics line of every evaluation file whose
// line metrics.jsonl lacks (the run stopped between the two writes).
func (l *Loop) repairEvalLines() error {
	entries, err := os.ReadDir(l.opts.Dir.EvalsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("train.Loop: evaluations: %w", err)
	}
	var steps []int
	for _, e := range entries {
		if n, ok := dataset.ParseStepName(strings.TrimSuffix(e.Name(), ".json")); ok && strings.HasSuffix(e.Name(), ".json") {
			steps = append(steps, n)
		}
	}
	sort.Ints(steps)
	for _, s := range steps {
		r, ok, err := ReadEval(l.opts.Dir, s)
		if err != nil || !ok {
			// A damaged file is evaluated again.
			l.log.Warn("evaluation file unreadable; the step will be evaluated again", zap.Int("step", s), zap.Error(err))
			if rerr := os.Remove(l.opts.Dir.EvalPath(s)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return fmt.Errorf("train.Loop: %w", rerr)
			}
			continue
		}
		if err := l.appendEvalLine(r); err != nil {
			return err
		}
	}
	return nil
}

// appendEvalLine appends r's line to metrics.jsonl unless it is there.
func (l *Loop) appendEvalLine(r EvalResult) error {
	l.metricsMu.Lock()
	defer l.metricsMu.Unlock()
	if l.evalRecorded[r.Step] {
		return nil
	}
	if err := AppendMetrics(l.opts.Dir.MetricsPath(), r.Metrics()); err != nil {
		return err
	}
	l.evalRecorded[r.Step] = true
	return nil
}

// queue queues step's evaluation when it should have one and has none.
// It never blocks.
func (ev *evaluator) queue(step int) error {
	if ev.opts.Every <= 0 || step%ev.opts.Every != 0 || ev.queued[step] {
		return nil
	}
	if _, err := os.Stat(ev.l.opts.Dir.EvalPath(step)); err == nil {
		return nil
	}
	dir, err := ev.l.trainedAdapter(step)
	if err != nil {
		return err
	}
	ev.queued[step] = true
	select {
	case ev.jobs <- evalJob{step: step, name: ev.l.AdapterName(step) + "-eval", path: dir}:
	default: // cannot happen: the channel holds every evaluable step
		return fmt.Errorf("train.Loop step %d: the evaluation queue is full", step)
	}
	return nil
}

// finish ends the evaluator. After a run that succeeded it waits for the
// queued evaluations (saying so); after a failure it cancels them (a
// resumed run redoes them). It returns runErr.
func (ev *evaluator) finish(runErr error) error {
	close(ev.jobs)
	if runErr != nil {
		ev.cancel()
	} else if n := len(ev.jobs); n > 0 {
		ev.l.log.Info("training done; waiting for the evaluations still queued", zap.Int("queued", n))
	}
	<-ev.done
	ev.cancel()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if runErr == nil && len(ev.failed) > 0 {
		ev.l.log.Warn("evaluations failed: parley train --resume evaluates them again", zap.Ints("steps", ev.failed))
	}
	return runErr
}

// work runs the queued evaluations one at a time until the queue is
// closed and empty, or ctx ends.
func (ev *evaluator) work(ctx context.Context) {
	defer close(ev.done)
	for job := range ev.jobs {
		if ctx.Err() != nil {
			continue // drain: interrupted evaluations are redone on resume
		}
		if err := ev.run(ctx, job); err != nil {
			if ctx.Err() == nil {
				ev.l.log.Warn("evaluation failed", zap.Int("step", job.step), zap.Error(err))
			}
			ev.mu.Lock()
			ev.failed = append(ev.failed, job.step)
			ev.mu.Unlock()
		}
	}
}

// run evaluates one step: it loads the step's adapter under its own
// name (the loop unloads its own as training moves on), plays both sides,
// writes the result file and then the metrics line.
func (ev *evaluator) run(ctx context.Context, job evalJob) error {
	l, o := ev.l, ev.opts
	t0 := time.Now()
	if err := l.opts.Adapters.LoadLoRA(ctx, job.name, job.path); err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: load adapter %s: %w", job.step, job.name, err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := l.opts.Adapters.UnloadLoRA(uctx, job.name); err != nil {
			l.log.Warn("unload of the evaluated adapter failed", zap.String("adapter", job.name), zap.Error(err))
		}
	}()
	game := o.Game
	if game == nil {
		game = l.opts.Rollout.Game
	}
	base := l.opts.Rollout.Model
	tickR, endR := l.progress(fmt.Sprintf("step %d eval rollouts", job.step), 2*len(o.Prompts))
	tickJ, endJ := l.progress(fmt.Sprintf("step %d eval comparisons", job.step), len(o.Prompts))
	rep, err := harness.RunPairwise(ctx, harness.PairwiseOptions{
		Left:    harness.Side{Name: job.name, Policy: l.opts.Rollout.Policy, Model: job.name, Game: game},
		Right:   harness.Side{Name: "base", Policy: l.opts.Rollout.Policy, Model: base, Game: game},
		Prompts: o.Prompts, Set: o.Set, Aspects: []harness.Aspect{o.Aspect},
		Decodings: []harness.Decoding{o.Decoding}, Runs: 1, Seed: rollout.DeriveSeed(l.opts.Seed, "eval", int64(job.step)),
		ChatTemplateKwargs: l.opts.Rollout.ChatTemplateKwargs,
		Concurrency:        o.Concurrency, JudgeConcurrency: o.JudgeConcurrency, Scorer: o.Scorer,
		Logger: l.log.Named("eval"), OnRollout: tickR, OnCompared: tickJ,
	})
	endR(err != nil)
	endJ(err != nil)
	if err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	crashpoint.Hit("eval-judged") // compared, nothing written
	r := EvalResult{
		EvalSetup: report.EvalSetup{Step: job.step, Base: base, Set: o.Set, Prompts: len(o.Prompts),
			Decoding: o.Decoding.Name, Comparison: comparisonDoc(o.Aspect.Judge), Judge: rep.Cells[0].Judge},
		Adapter: job.name, AdapterPath: job.path, Scale: o.Scale,
		Result:      rep.Cells[0].PairwiseResult,
		Excluded:    rep.Cells[0].RolloutFailed + rep.Cells[0].JudgeFailed,
		Comparisons: rep.Comparisons, Seconds: time.Since(t0).Seconds(),
	}
	if len(rep.Sides) == 2 {
		r.Trained, r.BaseSide = rep.Sides[0], rep.Sides[1]
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	if err := fsutil.WriteFileAtomic(l.opts.Dir.EvalPath(job.step), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	crashpoint.Hit("after-eval-file") // the file written, its line not
	if err := l.appendEvalLine(r); err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	m := r.Metrics()
	l.log.Info("evaluation done", zap.Int("step", job.step), zap.Any("win_rate", m[string(metrics.KeyEvalWinRate)]),
		zap.Any("score_mean", m[string(metrics.KeyEvalScoreMean)]), zap.Any("base_score_mean", m[string(metrics.KeyEvalBaseScoreMean)]),
		zap.Any("agreement_rate", m[string(metrics.KeyEvalAgreementRate)]), zap.Float64("seconds", r.Seconds))
	if o.OnEval != nil {
		o.OnEval(m)
	}
	return nil
}

// comparisonDoc says how a comparer compares, for the result file.
func comparisonDoc(c harness.Comparer) string {
	if _, ok := c.(harness.RolloutComparer); ok {
		return "pointwise scores of both rollouts: the higher wins both orders, equal scores tie"
	}
	return "pairwise LLM judge, asked in both orders"
}

// check validates o and fills its defaults.
func (o *EvalOptions) check() error {
	if o.Every < 0 {
		return fmt.Errorf("eval every %d steps: must not be negative", o.Every)
	}
	if o.Every == 0 {
		return nil
	}
	var errs []error
	if len(o.Prompts) == 0 {
		errs = append(errs, errors.New("no held-out prompts to evaluate on"))
	}
	for _, p := range o.Prompts {
		if p.Split != dataset.SplitEval {
			errs = append(errs, fmt.Errorf("evaluation prompt %s is in split %q, not %s", p.ID, p.Split, dataset.SplitEval))
			break
		}
	}
	if o.Aspect.Judge == nil || o.Aspect.Name == "" {
		errs = append(errs, errors.New("the evaluation needs an aspect and its judge"))
	}
	if o.Scorer == nil {
		errs = append(errs, errors.New("the evaluation needs a scorer"))
	}
	if o.Decoding.Name == "" {
		errs = append(errs, errors.New("the evaluation needs a decoding"))
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.JudgeConcurrency <= 0 {
		o.JudgeConcurrency = 8
	}
	if o.Set == "" {
		o.Set = "curriculum split " + dataset.SplitEval
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}
