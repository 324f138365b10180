package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// StepEvalOptions configure a StepEvaluator, the evaluation of a step's
// adapter while the loop trains (train.eval_every): the adapter plays the
// held-out prompts against the base model under one decoding (greedy), the
// two final completions of each prompt are compared (in both orders for a
// pairwise judge), and each side's rollouts are scored pointwise.
type StepEvalOptions struct {
	// Prompts are the held-out prompts (the curriculum's eval split), which
	// both sides play in this order.
	Prompts []dataset.Prompt
	// Set names the prompts in results (default "curriculum split eval").
	Set string
	// Aspect compares the two sides' final completions: with an LLM judge
	// a reward.PairwiseJudge (asked in both orders), with a rule or a
	// game's scorer a ScoreComparer (higher score wins).
	Aspect Aspect
	// Scorer scores each side's rollouts pointwise for their mean score
	// (the run's reward judge); Scale is its scale, which labels it.
	Scorer reward.Judge
	Scale  dataset.ScoreScale
	// Decoding is the decoding both sides sample with (greedy:
	// NewDecodings with report.DecodingGreedy).
	Decoding Decoding
	// Concurrency bounds each side's rollouts in flight (default 8);
	// JudgeConcurrency the judge's calls (default 8).
	Concurrency, JudgeConcurrency int

	// What the training loop plays with: the game both sides play (every
	// role played by the side's model), the policy client serving the
	// adapters and the base model, the base model's name, the run's seed
	// (each step's evaluation samples with one derived from it) and the
	// chat template's arguments (enable_thinking).
	Game               rollout.Game
	Policy             rollout.Policy
	Base               string
	Seed               int64
	ChatTemplateKwargs map[string]any
	// Progress, if set, starts a progress bar (as train.LoopOptions'):
	// one for each evaluation's rollouts, one for its comparisons.
	Progress func(label string, total int) (tick func(), end func(failed bool))
	// Logger receives the evaluation's logs; nil means none.
	Logger *zap.Logger
}

// StepEvaluator evaluates the adapter of a trained step against the base
// model (StepEvalOptions); the training loop runs it beside training, as
// its train.Evaluator. The zero StepEvaluator evaluates nothing but reads
// evaluation files (EvalLine), which is what a run with train.eval_every 0
// needs to complete the lines of an earlier run's evaluations.
type StepEvaluator struct {
	opts StepEvalOptions
}

// NewStepEvaluator checks opts and fills its defaults.
func NewStepEvaluator(opts StepEvalOptions) (*StepEvaluator, error) {
	var errs []error
	if len(opts.Prompts) == 0 {
		errs = append(errs, errors.New("no held-out prompts to evaluate on"))
	}
	for _, p := range opts.Prompts {
		if p.Split != dataset.SplitEval {
			errs = append(errs, fmt.Errorf("evaluation prompt %s is in split %q, not %s", p.ID, p.Split, dataset.SplitEval))
			break
		}
	}
	if opts.Aspect.Judge == nil || opts.Aspect.Name == "" {
		errs = append(errs, errors.New("the evaluation needs an aspect and its judge"))
	}
	if opts.Scorer == nil {
		errs = append(errs, errors.New("the evaluation needs a scorer"))
	}
	if opts.Decoding.Name == "" {
		errs = append(errs, errors.New("the evaluation needs a decoding"))
	}
	if opts.Game == nil || opts.Policy == nil {
		errs = append(errs, errors.New("the evaluation needs the game and the policy"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("harness.NewStepEvaluator: %w", err)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.JudgeConcurrency <= 0 {
		opts.JudgeConcurrency = 8
	}
	if opts.Set == "" {
		opts.Set = "curriculum split " + dataset.SplitEval
	}
	return &StepEvaluator{opts: opts}, nil
}

// EvaluateStep evaluates the adapter trained on step, which the loop has
// loaded from adapterPath under the name adapter, against the base model.
// It returns the evaluation's record as RUN/evals/step-N.json holds it
// (an indented EvalResult) and its metrics.jsonl line; the record's time
// counts from started, when the loop began the evaluation.
func (e *StepEvaluator) EvaluateStep(ctx context.Context, step int, adapter, adapterPath string, started time.Time) ([]byte, metrics.Line, error) {
	o := e.opts
	if o.Policy == nil {
		return nil, nil, errors.New("harness.StepEvaluator.EvaluateStep: not configured (NewStepEvaluator)")
	}
	tickR, endR := o.progress(fmt.Sprintf("step %d eval rollouts", step), 2*len(o.Prompts))
	tickJ, endJ := o.progress(fmt.Sprintf("step %d eval comparisons", step), len(o.Prompts))
	rep, err := RunPairwise(ctx, PairwiseOptions{
		Left:    Side{Name: adapter, Policy: o.Policy, Model: adapter, Game: o.Game},
		Right:   Side{Name: "base", Policy: o.Policy, Model: o.Base, Game: o.Game},
		Prompts: o.Prompts, Set: o.Set, Aspects: []Aspect{o.Aspect},
		Decodings: []Decoding{o.Decoding}, Runs: 1, Seed: rollout.DeriveSeed(o.Seed, "eval", int64(step)),
		ChatTemplateKwargs: o.ChatTemplateKwargs,
		Concurrency:        o.Concurrency, JudgeConcurrency: o.JudgeConcurrency, Scorer: o.Scorer,
		Logger: o.Logger, OnRollout: tickR, OnCompared: tickJ,
	})
	endR(err != nil)
	endJ(err != nil)
	if err != nil {
		return nil, nil, fmt.Errorf("harness.StepEvaluator.EvaluateStep: %w", err)
	}
	r := EvalResult{
		EvalSetup: report.EvalSetup{Step: step, Base: o.Base, Set: o.Set, Prompts: len(o.Prompts),
			Decoding: o.Decoding.Name, Comparison: comparisonDoc(o.Aspect.Judge), Judge: rep.Cells[0].Judge},
		Adapter: adapter, AdapterPath: adapterPath, Scale: o.Scale,
		Result:      rep.Cells[0].PairwiseResult,
		Excluded:    rep.Cells[0].RolloutFailed + rep.Cells[0].JudgeFailed,
		Comparisons: rep.Comparisons, Seconds: time.Since(started).Seconds(),
	}
	if len(rep.Sides) == 2 {
		r.Trained, r.BaseSide = rep.Sides[0], rep.Sides[1]
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("harness.StepEvaluator.EvaluateStep: %w", err)
	}
	return append(b, '\n'), r.Metrics(), nil
}

// EvalLine is the metrics.jsonl line of step's evaluation file, file being
// its content (RUN/evals/step-N.json as EvaluateStep made it). An error
// means the file is damaged.
func (e *StepEvaluator) EvalLine(step int, file []byte) (metrics.Line, error) {
	r, err := decodeEval(step, file)
	if err != nil {
		return nil, fmt.Errorf("harness.StepEvaluator.EvalLine: %w", err)
	}
	return r.Metrics(), nil
}

// evalSamples is how many dialogues EvalSamples renders.
const evalSamples = 3

// EvalSamples renders the first few compared prompts of an evaluation
// file (RUN/evals/step-N.json) as markdown, for TensorBoard's and W&B's
// text panels: each prompt's final completions of the trained side and of
// the base, with their rounds and the outcome. A damaged file gives "".
func (e *StepEvaluator) EvalSamples(file []byte) string {
	var r EvalResult
	if json.Unmarshal(file, &r) != nil {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, c := range r.Comparisons {
		if c.Excluded != "" || n == evalSamples {
			continue
		}
		n++
		fmt.Fprintf(&b, "**prompt %s** (%s, run %d): trained side's outcome %g\n\n", c.PromptID, c.Decoding, c.Run, c.Outcome)
		fmt.Fprintf(&b, "- trained, %d rounds: %s\n- base, %d rounds: %s\n\n", c.LeftRounds, oneLine(c.LeftFinal), c.RightRounds, oneLine(c.RightFinal))
	}
	return strings.TrimSpace(b.String())
}

// oneLine is s with its line breaks as spaces (a markdown list item).
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// progress starts a progress bar through o.Progress, or nothing.
func (o StepEvalOptions) progress(label string, total int) (tick func(), end func(bool)) {
	if o.Progress == nil {
		return func() {}, func(bool) {}
	}
	return o.Progress(label, total)
}

// comparisonDoc says how a comparer compares, for the result file.
func comparisonDoc(c Comparer) string {
	if _, ok := c.(RolloutComparer); ok {
		return "pointwise scores of both rollouts: the higher wins both orders, equal scores tie"
	}
	return "pairwise LLM judge, asked in both orders"
}

// EvalResult is one step's evaluation during training, as
// RUN/evals/step-N.json holds it.
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
	Trained     SideStats             `json:"trained"`
	BaseSide    SideStats             `json:"base_side"`
	Comparisons []Comparison          `json:"comparisons"`
	Seconds     float64               `json:"seconds"`
}

// Metrics is the evaluation's line for metrics.jsonl: {"step": N, "kind":
// "eval", …} with the keys under metrics.EvalPrefix. The trained side is
// the step's adapter; the base_ keys are the base model's.
func (r EvalResult) Metrics() metrics.Line {
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
	return m
}

// ReadEval reads RUN/evals/step-N.json; ok is false when there is none.
func ReadEval(d dataset.RunDir, step int) (EvalResult, bool, error) {
	b, err := os.ReadFile(d.EvalPath(step))
	if errors.Is(err, fs.ErrNotExist) {
		return EvalResult{}, false, nil
	}
	if err != nil {
		return EvalResult{}, false, fmt.Errorf("harness.ReadEval: %w", err)
	}
	r, err := decodeEval(step, b)
	if err != nil {
		return EvalResult{}, false, fmt.Errorf("harness.ReadEval: %s: %w", d.EvalPath(step), err)
	}
	return r, true, nil
}

// decodeEval decodes step's evaluation file.
func decodeEval(step int, b []byte) (EvalResult, error) {
	var r EvalResult
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.Step != step {
		return r, fmt.Errorf("the evaluation is for step %d, not %d", r.Step, step)
	}
	return r, nil
}
