package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/metrics"
	"go.uber.org/zap"
)

// EvalOptions configure the evaluations the loop runs while it trains
// (train.eval_every): every Every steps, the loop loads the adapter of that
// step under a name of its own and has the Evaluator evaluate it (against
// the base model, on held-out prompts).
//
// An evaluation runs in the loop's background, one at a time: the loop
// only queues the step and goes on training. Its record is written
// atomically to RUN/evals/step-N.json, then its line is appended to
// metrics.jsonl ({"step": N, "kind": "eval", "eval/…": …}). A run that
// resumes evaluates the steps that should have an evaluation, have a DONE
// and have no file, and appends the line of a file whose line is missing;
// an evaluation interrupted before its file is written is redone.
type EvalOptions struct {
	// Every evaluates the adapter of every Every-th step (0: never).
	Every int
	// Evaluator evaluates a step's adapter (eval/harness.StepEvaluator);
	// required when Every > 0. With Every 0 it is only asked for the
	// lines of evaluation files already written; without one, such files
	// are left as they are.
	Evaluator Evaluator
	// OnEval, if set, is called with each evaluation's metrics line, from
	// the evaluation's goroutine.
	OnEval func(m map[string]any)
}

// Evaluator is what the loop needs of an evaluation during training.
type Evaluator interface {
	// EvaluateStep evaluates the adapter trained on step, which the loop
	// has loaded from adapterPath under the name adapter, and returns the
	// record to write to RUN/evals/step-N.json (the file's bytes) and its
	// metrics.jsonl line. started is when the loop began the evaluation
	// (loading the adapter): the record's time counts from it.
	EvaluateStep(ctx context.Context, step int, adapter, adapterPath string, started time.Time) (file []byte, line metrics.Line, err error)
	// EvalLine is the metrics.jsonl line of step's evaluation file,
	// given its content: the loop appends it when a run stopped between
	// writing the file and its line. An error means the file is damaged,
	// and the step is evaluated again.
	EvalLine(step int, file []byte) (metrics.Line, error)
}

// evalJob is a step whose adapter is to be evaluated.
type evalJob struct {
	step       int
	name, path string // the adapter's name for the evaluation and its folder
}

// evalRunner runs the loop's evaluations, one at a time, in its own
// goroutine: queueing never blocks the loop, and the runner touches
// nothing of the loop's state but the metrics file, under metricsMu.
type evalRunner struct {
	l      *Loop
	opts   EvalOptions
	jobs   chan evalJob
	cancel context.CancelFunc
	done   chan struct{}
	queued map[int]bool // touched by the loop's goroutine only

	mu     sync.Mutex
	failed []int
}

// startEvals starts the evaluation runner of a Run: it appends the lines of
// evaluation files whose line is missing, and queues the steps already
// trained that should have an evaluation and have none. With Every 0 it
// only repairs lines, and returns a runner that queues nothing.
func (l *Loop) startEvals(ctx context.Context) (*evalRunner, error) {
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
	ev := &evalRunner{l: l, opts: o, jobs: make(chan evalJob, capacity), cancel: cancel, done: make(chan struct{}), queued: map[int]bool{}}
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
// Without an Evaluator to read them, the files are left as they are.
func (l *Loop) repairEvalLines() error {
	if l.opts.Eval.Evaluator == nil {
		return nil
	}
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
		file, err := os.ReadFile(l.opts.Dir.EvalPath(s))
		var line metrics.Line
		if err == nil {
			line, err = l.opts.Eval.Evaluator.EvalLine(s, file)
		}
		if err != nil {
			// A damaged file is evaluated again.
			l.log.Warn("evaluation file unreadable; the step will be evaluated again", zap.Int("step", s), zap.Error(err))
			if rerr := os.Remove(l.opts.Dir.EvalPath(s)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return fmt.Errorf("train.Loop: %w", rerr)
			}
			continue
		}
		if err := l.appendEvalLine(s, line, file); err != nil {
			return err
		}
	}
	return nil
}

// EvalReport is one held-out evaluation, or one audit (its audit/…
// metrics), as the trainer's reporters (TensorBoard, W&B) get it, in the
// sidecar of the next batch written after it (metrics.KeyEvals): its step,
// its eval/… metrics and, when the Evaluator writes them (EvalSampler),
// sample dialogues as markdown.
type EvalReport struct {
	Step    int                `json:"step"`
	Metrics map[string]float64 `json:"metrics"`
	Samples string             `json:"samples,omitempty"`
}

// pastStepReport is the report, for the trainer's reporters, of the
// numeric keys under prefix of a line about an earlier step (an
// evaluation's, an audit's).
func pastStepReport(step int, line metrics.Line, prefix metrics.Key) EvalReport {
	r := EvalReport{Step: step, Metrics: map[string]float64{}}
	for k, v := range line {
		if !strings.HasPrefix(string(k), string(prefix)) {
			continue
		}
		switch x := v.(type) {
		case float64:
			r.Metrics[string(k)] = x
		case int:
			r.Metrics[string(k)] = float64(x)
		case int64:
			r.Metrics[string(k)] = float64(x)
		}
	}
	return r
}

// EvalSampler is an Evaluator that also renders sample dialogues of an
// evaluation file for the trainer's reporters.
type EvalSampler interface {
	// EvalSamples renders a few of the file's dialogues as markdown.
	EvalSamples(file []byte) string
}

// appendEvalLine appends step's evaluation line to metrics.jsonl unless it
// is there, and queues it (with samples of file) for the trainer's
// reporters.
func (l *Loop) appendEvalLine(step int, line metrics.Line, file []byte) error {
	l.metricsMu.Lock()
	defer l.metricsMu.Unlock()
	if l.evalRecorded[step] {
		return nil
	}
	if err := AppendMetrics(l.opts.Dir.MetricsPath(), line); err != nil {
		return err
	}
	l.evalRecorded[step] = true
	r := pastStepReport(step, line, metrics.EvalPrefix)
	if s, ok := l.opts.Eval.Evaluator.(EvalSampler); ok {
		r.Samples = s.EvalSamples(file)
	}
	l.evalsUnsent = append(l.evalsUnsent, r)
	return nil
}

// queue queues step's evaluation when it should have one and has none.
// It never blocks.
func (ev *evalRunner) queue(step int) error {
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

// finish ends the runner. After a run that succeeded it waits for the
// queued evaluations (saying so); after a failure it cancels them (a
// resumed run redoes them). It returns runErr.
func (ev *evalRunner) finish(runErr error) error {
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
func (ev *evalRunner) work(ctx context.Context) {
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
// name (the loop unloads its own as training moves on), has the Evaluator
// evaluate it, writes the record file and then the metrics line.
func (ev *evalRunner) run(ctx context.Context, job evalJob) error {
	l := ev.l
	started := time.Now()
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
	file, line, err := ev.opts.Evaluator.EvaluateStep(ctx, job.step, job.name, job.path, started)
	if err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	crashpoint.Hit("eval-judged") // compared, nothing written
	if err := fsutil.WriteFileAtomic(l.opts.Dir.EvalPath(job.step), file, 0o644); err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	crashpoint.Hit("after-eval-file") // the file written, its line not
	if err := l.appendEvalLine(job.step, line, file); err != nil {
		return fmt.Errorf("train.Loop step %d: evaluation: %w", job.step, err)
	}
	l.log.Info("evaluation done", zap.Int("step", job.step), zap.Any("win_rate", line[metrics.KeyEvalWinRate]),
		zap.Any("score_mean", line[metrics.KeyEvalScoreMean]), zap.Any("base_score_mean", line[metrics.KeyEvalBaseScoreMean]),
		zap.Any("agreement_rate", line[metrics.KeyEvalAgreementRate]), zap.Any("seconds", line[metrics.KeyEvalSeconds]))
	if ev.opts.OnEval != nil {
		ev.opts.OnEval(line.Strings())
	}
	return nil
}

// check validates o.
func (o *EvalOptions) check() error {
	if o.Every < 0 {
		return fmt.Errorf("eval every %d steps: must not be negative", o.Every)
	}
	if o.Every > 0 && o.Evaluator == nil {
		return fmt.Errorf("eval: evaluating every %d steps needs an evaluator", o.Every)
	}
	return nil
}
