package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/eval/stats"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// Eval sets of pairwise comparisons, as written in results (the rows of
// seed 000 table 2).
const (
	SetConflict  = "conflict resolution questions"
	SetOpenEnded = "open-ended questions"
)

// Comparer compares a left and a right final completion for one task, in
// both orders: reward.PairwiseJudge.
type Comparer interface {
	Compare(ctx context.Context, task, personaA, personaB, left, right string) (reward.PairResult, error)
}

var _ Comparer = (*reward.PairwiseJudge)(nil)

// Side is one side of a pairwise comparison: a policy, the model or
// adapter it samples, and the game it plays.
type Side struct {
	// Name is the side's name in results ("base", an adapter's name, …).
	Name   string
	Policy rollout.Policy
	// Model is the served model or LoRA adapter name.
	Model string
	// Game is rollout.Deliberation or rollout.Single.
	Game rollout.Game
}

// Aspect is a judged aspect and its judge.
type Aspect struct {
	// Name is reward.AspectCollectiveAgency or
	// reward.AspectConflictResolution.
	Name  string
	Judge Comparer
}

// Decoding is a named set of sampling parameters.
type Decoding struct {
	// Name is report.DecodingGreedy or report.DecodingSampling.
	Name     string
	Sampling llm.Sampling
}

// NewDecodings returns the decodings named (report.DecodingGreedy,
// report.DecodingSampling): greedy is temperature 0 (top_p 1, no top_k)
// with sampling's token limit; sampling is sampling as given.
func NewDecodings(names []string, sampling llm.Sampling) ([]Decoding, error) {
	if len(names) == 0 {
		return nil, errors.New("harness.NewDecodings: no decoding named")
	}
	var out []Decoding
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("harness.NewDecodings: %q named twice", n)
		}
		seen[n] = true
		switch n {
		case report.DecodingGreedy:
			out = append(out, Decoding{Name: n, Sampling: llm.Sampling{MaxTokens: sampling.MaxTokens, Temperature: 0, TopP: 1}})
		case report.DecodingSampling:
			out = append(out, Decoding{Name: n, Sampling: sampling})
		default:
			return nil, fmt.Errorf("harness.NewDecodings: unknown decoding %q (want %s or %s)", n, report.DecodingGreedy, report.DecodingSampling)
		}
	}
	return out, nil
}

// ReportAspect maps a judge aspect to its name in results:
// reward.AspectCollectiveAgency is report.AspectCA; other names are kept.
func ReportAspect(aspect string) string {
	if aspect == reward.AspectCollectiveAgency {
		return report.AspectCA
	}
	return aspect
}

// PairwiseOptions configure RunPairwise.
type PairwiseOptions struct {
	Left, Right Side
	// Prompts are played by both sides, in this order.
	Prompts []dataset.Prompt
	// Set names the eval set in results (SetConflict, SetOpenEnded, …).
	Set string
	// Aspects are judged for every pair of final completions.
	Aspects []Aspect
	// Decodings are played in turn, each for Runs runs.
	Decodings []Decoding
	// Runs is the number of runs per decoding; run k samples with seed
	// rollout.DeriveSeed(Seed, "eval/pairwise/run", k), the same for both
	// sides.
	Runs int
	Seed int64
	// ChatTemplateKwargs go to /tokenize (enable_thinking).
	ChatTemplateKwargs map[string]any
	// Concurrency bounds the rollouts in flight per side (default 16).
	Concurrency int
	// JudgeConcurrency bounds the comparisons in flight (default 16).
	JudgeConcurrency int
	Logger           *zap.Logger
	// OnRollout, if set, is called after each rollout (both sides);
	// OnCompared after each comparison. They may be called concurrently.
	OnRollout  func()
	OnCompared func()
}

// Comparison is one prompt's comparison for one aspect in one run: a line
// of the details file.
type Comparison struct {
	Decoding string `json:"decoding"`
	Run      int    `json:"run"`
	Aspect   string `json:"aspect"`
	Index    int    `json:"index"`
	PromptID string `json:"prompt_id"`
	// LeftWins, RightWins and Ties count the verdicts of the two orders.
	LeftWins  int `json:"left_wins"`
	RightWins int `json:"right_wins"`
	Ties      int `json:"ties"`
	// Outcome is the left side's score in [0,1] (a tie counts half).
	Outcome             float64 `json:"outcome"`
	LeftRounds          int32   `json:"left_rounds"`
	RightRounds         int32   `json:"right_rounds"`
	LeftFinal           string  `json:"left_final"`
	RightFinal          string  `json:"right_final"`
	LeftFirstRationale  string  `json:"left_first_rationale,omitempty"`
	RightFirstRationale string  `json:"right_first_rationale,omitempty"`
	// Excluded is ExcludedRollout or ExcludedJudge when the comparison is
	// excluded from the win rate, with the cause in Error.
	Excluded string `json:"excluded,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Reasons a comparison is excluded.
const (
	ExcludedRollout = "rollout" // a side's rollout failed
	ExcludedJudge   = "judge"   // the judge failed
)

// PairwiseCell is one result of RunPairwise: a report.PairwiseResult (what
// eval/report reads) with its provenance.
type PairwiseCell struct {
	report.PairwiseResult
	Judge     string `json:"judge,omitempty"`
	LeftGame  string `json:"left_game"`
	RightGame string `json:"right_game"`
	// Prompts is the number of prompts each run played.
	Prompts int `json:"prompts"`
	// RolloutFailed and JudgeFailed count the comparisons excluded over all
	// runs because a side's rollout failed or the judge failed.
	RolloutFailed int `json:"rollout_failed"`
	JudgeFailed   int `json:"judge_failed"`
}

// PairwiseReport is the outcome of RunPairwise.
type PairwiseReport struct {
	// Cells are the results, aspect by aspect, decoding by decoding.
	Cells []PairwiseCell
	// Comparisons are every comparison, excluded ones with their Error.
	Comparisons []Comparison
}

// Results returns the report.PairwiseResult of every cell.
func (r PairwiseReport) Results() []report.PairwiseResult {
	out := make([]report.PairwiseResult, len(r.Cells))
	for i, c := range r.Cells {
		out[i] = c.PairwiseResult
	}
	return out
}

// RunPairwise plays both sides on the prompts for every decoding and run,
// judges each pair of final completions for every aspect in both orders,
// and summarises the left side's win rate per aspect and decoding: for each
// run, stats.WinRate over the verdicts (two per prompt: a left win counts
// 1, a tie 0.5), then mean ± SD over the runs. A prompt whose rollout
// failed on either side, or whose comparison the judge failed, is excluded
// and counted. Each side's rounds of negotiation are the mean over its
// successful rollouts of the run, for games that negotiate (the
// deliberation game) and nil otherwise.
func RunPairwise(ctx context.Context, opts PairwiseOptions) (PairwiseReport, error) {
	if err := opts.check(); err != nil {
		return PairwiseReport{}, err
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	type cellKey struct{ aspect, decoding string }
	runs := map[cellKey][]report.PairwiseRun{}
	failed := map[cellKey][2]int{} // rollout, judge
	var rep PairwiseReport
	for _, dec := range opts.Decodings {
		for run := 0; run < opts.Runs; run++ {
			seed := rollout.DeriveSeed(opts.Seed, "eval/pairwise/run", int64(run))
			var left, right sideRun
			var lerr, rerr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); left, lerr = opts.play(ctx, opts.Left, dec, seed, log) }()
			go func() { defer wg.Done(); right, rerr = opts.play(ctx, opts.Right, dec, seed, log) }()
			wg.Wait()
			if err := errors.Join(lerr, rerr); err != nil {
				return rep, fmt.Errorf("harness.RunPairwise: %s run %d: %w", dec.Name, run, err)
			}
			comps := opts.judge(ctx, dec.Name, run, left, right)
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("harness.RunPairwise: %s run %d: %w", dec.Name, run, err)
			}
			rep.Comparisons = append(rep.Comparisons, comps...)
			for _, a := range opts.Aspects {
				k := cellKey{a.Name, dec.Name}
				var outcomes []stats.Outcome
				f := failed[k]
				for _, c := range comps {
					if c.Aspect != ReportAspect(a.Name) {
						continue
					}
					switch c.Excluded {
					case ExcludedRollout:
						f[0]++
					case ExcludedJudge:
						f[1]++
					default:
						outcomes = append(outcomes, verdicts(c)...)
					}
				}
				failed[k] = f
				w, err := stats.WinRate(outcomes)
				if err != nil {
					log.Warn("pairwise run has no comparison left; skipped",
						zap.String("aspect", a.Name), zap.String("decoding", dec.Name), zap.Int("run", run))
					continue
				}
				runs[k] = append(runs[k], report.NewPairwiseRun(w, left.rounds, right.rounds))
			}
		}
	}
	judged := false
	for _, a := range opts.Aspects {
		for _, dec := range opts.Decodings {
			k := cellKey{a.Name, dec.Name}
			judged = judged || len(runs[k]) > 0
			cell := PairwiseCell{
				PairwiseResult: report.NewPairwiseResult(opts.Left.Name, opts.Right.Name, opts.Set, ReportAspect(a.Name), dec.Name, runs[k]),
				LeftGame:       opts.Left.Game.Name(),
				RightGame:      opts.Right.Game.Name(),
				Prompts:        len(opts.Prompts),
				RolloutFailed:  failed[k][0],
				JudgeFailed:    failed[k][1],
			}
			if n, ok := a.Judge.(interface{ Name() string }); ok {
				cell.Judge = n.Name()
			}
			rep.Cells = append(rep.Cells, cell)
		}
	}
	if !judged {
		return rep, errors.New("harness.RunPairwise: every comparison failed (see the details for the errors)")
	}
	return rep, nil
}

func (o *PairwiseOptions) check() error {
	var errs []error
	for _, s := range []struct {
		name string
		side Side
	}{{"left", o.Left}, {"right", o.Right}} {
		if s.side.Policy == nil || s.side.Game == nil {
			errs = append(errs, fmt.Errorf("the %s side needs a policy and a game", s.name))
		}
		if s.side.Name == "" {
			errs = append(errs, fmt.Errorf("the %s side has no name", s.name))
		}
	}
	if len(o.Prompts) == 0 {
		errs = append(errs, errors.New("no prompts"))
	}
	if len(o.Aspects) == 0 {
		errs = append(errs, errors.New("no aspect to judge"))
	}
	seen := map[string]bool{}
	for _, a := range o.Aspects {
		if a.Judge == nil {
			errs = append(errs, fmt.Errorf("aspect %q has no judge", a.Name))
		}
		if seen[a.Name] {
			errs = append(errs, fmt.Errorf("aspect %q named twice", a.Name))
		}
		seen[a.Name] = true
	}
	if len(o.Decodings) == 0 {
		errs = append(errs, errors.New("no decoding"))
	}
	if o.Runs < 1 {
		errs = append(errs, fmt.Errorf("runs %d must be at least 1", o.Runs))
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.JudgeConcurrency <= 0 {
		o.JudgeConcurrency = 16
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("harness.RunPairwise: %w", err)
	}
	return nil
}

// sideRun is one side's rollouts of one run, by prompt index.
type sideRun struct {
	recs   []*dataset.Rollout
	rounds *float64 // nil for a game that does not negotiate
}

// play plays every prompt once with side's game and model.
func (o *PairwiseOptions) play(ctx context.Context, side Side, dec Decoding, seed int64, log *zap.Logger) (sideRun, error) {
	runner, err := rollout.NewRunner(rollout.RunnerOptions{
		Game: side.Game, Policy: side.Policy, Model: side.Model,
		Sampling: dec.Sampling, ChatTemplateKwargs: o.ChatTemplateKwargs,
		GroupSize: 1, Concurrency: o.Concurrency, Seed: seed,
		RunID: "eval-pairwise", Logger: log.With(zap.String("side", side.Name), zap.String("decoding", dec.Name)),
	})
	if err != nil {
		return sideRun{}, err
	}
	index := make(map[string]int, len(o.Prompts))
	for i := range o.Prompts {
		index[rollout.GroupID(0, i)] = i
	}
	out := sideRun{recs: make([]*dataset.Rollout, len(o.Prompts))}
	sum, err := runner.Run(ctx, o.Prompts, func(r *dataset.Rollout) error {
		i, ok := index[r.GroupID]
		if !ok {
			return fmt.Errorf("rollout %s of an unknown group", r.RolloutID)
		}
		out.recs[i] = r
		if o.OnRollout != nil {
			o.OnRollout()
		}
		return nil
	})
	if err != nil {
		return sideRun{}, fmt.Errorf("side %s: %w", side.Name, err)
	}
	if sum.Interrupted > 0 {
		if err := ctx.Err(); err != nil {
			return sideRun{}, fmt.Errorf("side %s: %w", side.Name, err)
		}
		return sideRun{}, fmt.Errorf("side %s: %d rollouts interrupted", side.Name, sum.Interrupted)
	}
	if side.Game.Name() == "deliberation" {
		var total float64
		n := 0
		for _, r := range out.recs {
			if r != nil && !r.Failed {
				total += float64(r.Rounds)
				n++
			}
		}
		if n > 0 {
			m := total / float64(n)
			out.rounds = &m
		}
	}
	return out, nil
}

// judge compares the two sides' final completions of every prompt for
// every aspect, with bounded concurrency, in a fixed order.
func (o *PairwiseOptions) judge(ctx context.Context, decoding string, run int, left, right sideRun) []Comparison {
	comps := make([]Comparison, 0, len(o.Prompts)*len(o.Aspects))
	for _, a := range o.Aspects {
		for i, p := range o.Prompts {
			c := Comparison{Decoding: decoding, Run: run, Aspect: ReportAspect(a.Name), Index: i, PromptID: p.ID}
			l, r := left.recs[i], right.recs[i]
			switch {
			case l == nil || r == nil:
				c.Error = "a side has no rollout for the prompt"
			case l.Failed:
				c.Error = "left rollout failed: " + l.Error
			case r.Failed:
				c.Error = "right rollout failed: " + r.Error
			}
			if l != nil {
				c.LeftRounds, c.LeftFinal = l.Rounds, l.Final
			}
			if r != nil {
				c.RightRounds, c.RightFinal = r.Rounds, r.Final
			}
			if c.Error != "" {
				c.Excluded = ExcludedRollout
			}
			comps = append(comps, c)
		}
	}
	sem := make(chan struct{}, o.JudgeConcurrency)
	var wg sync.WaitGroup
	for k := range comps {
		c := &comps[k]
		if c.Excluded != "" {
			continue
		}
		judge := o.aspect(c.Aspect)
		p := o.Prompts[c.Index]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := judge.Compare(ctx, p.Task, p.Persona("A"), p.Persona("B"), c.LeftFinal, c.RightFinal)
			if err != nil {
				c.Excluded, c.Error = ExcludedJudge, err.Error()
			} else {
				c.LeftWins, c.RightWins, c.Ties, c.Outcome = res.LeftWins, res.RightWins, res.Ties, res.Outcome
				c.LeftFirstRationale, c.RightFirstRationale = res.LeftFirstRationale, res.RightFirstRationale
			}
			if o.OnCompared != nil {
				o.OnCompared()
			}
		}()
	}
	wg.Wait()
	return comps
}

// aspect returns the judge of the aspect named as in results.
func (o *PairwiseOptions) aspect(name string) Comparer {
	for _, a := range o.Aspects {
		if ReportAspect(a.Name) == name {
			return a.Judge
		}
	}
	return nil
}

// verdicts turns a comparison into its two verdicts from the left side.
func verdicts(c Comparison) []stats.Outcome {
	var out []stats.Outcome
	for range c.LeftWins {
		out = append(out, stats.Win)
	}
	for range c.Ties {
		out = append(out, stats.Tie)
	}
	for range c.RightWins {
		out = append(out, stats.Loss)
	}
	return out
}
