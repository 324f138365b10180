package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/stats"
	"go.uber.org/zap"
)

// Comparer compares a left and a right final completion for one task, in
// both orders: reward.PairwiseJudge.
type Comparer interface {
	Compare(ctx context.Context, task, personaA, personaB, left, right string) (reward.PairResult, error)
}

var _ Comparer = (*reward.PairwiseJudge)(nil)

// RolloutComparer is a Comparer that decides from the two whole rollouts,
// not only their final completions (ScoreComparer: a game's scorer reads
// the dialogue). RunPairwise calls CompareRollouts when a judge has it.
type RolloutComparer interface {
	Comparer
	CompareRollouts(ctx context.Context, left, right *dataset.Rollout) (reward.PairResult, error)
}

// ScoreComparer compares two rollouts by the pointwise score a
// reward.Judge gives each (a rule scorer, a game's scorer): the higher
// score wins, equal scores tie. A pointwise score does not see the other
// response, so there is no position to bias and one comparison stands for
// both orders: it counts as two verdicts (two wins, two ties or two
// losses), as a pairwise judge's two orders would.
type ScoreComparer struct {
	Judge reward.Judge
}

var _ RolloutComparer = ScoreComparer{}

// Name is the judge's name.
func (c ScoreComparer) Name() string { return c.Judge.Name() }

// Compare scores left and right as the final completions of rollouts that
// carry only the task (enough for a rule on the final completion).
func (c ScoreComparer) Compare(ctx context.Context, task, _, _, left, right string) (reward.PairResult, error) {
	return c.CompareRollouts(ctx, &dataset.Rollout{Task: task, Final: left}, &dataset.Rollout{Task: task, Final: right})
}

// CompareRollouts scores both rollouts and compares the scores.
func (c ScoreComparer) CompareRollouts(ctx context.Context, left, right *dataset.Rollout) (reward.PairResult, error) {
	l, err := c.Judge.Judge(ctx, left)
	if err != nil {
		return reward.PairResult{}, fmt.Errorf("harness.ScoreComparer: left: %w", err)
	}
	r, err := c.Judge.Judge(ctx, right)
	if err != nil {
		return reward.PairResult{}, fmt.Errorf("harness.ScoreComparer: right: %w", err)
	}
	res := reward.PairResult{Model: c.Judge.Name(),
		LeftFirstRationale:  fmt.Sprintf("left %g (%s), right %g (%s)", l.Score, l.Rationale, r.Score, r.Rationale),
		RightFirstRationale: fmt.Sprintf("right %g (%s), left %g (%s)", r.Score, r.Rationale, l.Score, l.Rationale),
	}
	switch {
	case l.Score > r.Score:
		res.LeftWins, res.Outcome = 2, 1
	case l.Score < r.Score:
		res.RightWins, res.Outcome = 2, 0
	default:
		res.Ties, res.Outcome = 2, 0.5
	}
	return res, nil
}

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
	// Set names the eval set in results (a game's rollout.EvalSet.Label).
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
	// JudgeConcurrency bounds the comparisons in flight (default 16), and
	// the Scorer's calls.
	JudgeConcurrency int
	// Scorer, if set, scores every successful rollout of both sides
	// pointwise (the run's reward judge) before the comparisons, for each
	// side's mean score in PairwiseReport.Sides.
	Scorer reward.Judge
	Logger *zap.Logger
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

// SideStats summarises one side's rollouts of one run.
type SideStats struct {
	Side     string `json:"side"`
	Decoding string `json:"decoding"`
	Run      int    `json:"run"`
	// Rollouts were played, Failed of them failed.
	Rollouts int `json:"rollouts"`
	Failed   int `json:"failed"`
	// AgreementRate is the share of the successful rollouts that reached
	// agreement; RoundsToAgreement the mean rounds of those that did (nil
	// when none did); MeanRounds the mean rounds of all successful ones.
	// A game that does not negotiate never agrees.
	AgreementRate     float64  `json:"agreement_rate"`
	RoundsToAgreement *float64 `json:"rounds_to_agreement,omitempty"`
	MeanRounds        float64  `json:"mean_rounds"`
	// ScoreMean is the mean of PairwiseOptions.Scorer's scores over the
	// rollouts it scored (nil without a scorer, or when none was scored);
	// Scored and ScoreFailed count its verdicts.
	ScoreMean   *float64 `json:"score_mean,omitempty"`
	Scored      int      `json:"scored"`
	ScoreFailed int      `json:"score_failed"`
}

// PairwiseReport is the outcome of RunPairwise.
type PairwiseReport struct {
	// Cells are the results, aspect by aspect, decoding by decoding.
	Cells []PairwiseCell
	// Comparisons are every comparison, excluded ones with their Error.
	Comparisons []Comparison
	// Sides summarise each side's rollouts, run by run: left then right.
	Sides []SideStats
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
			rep.Sides = append(rep.Sides, opts.sideStats(ctx, opts.Left, dec.Name, run, left), opts.sideStats(ctx, opts.Right, dec.Name, run, right))
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
	sum    rollout.Summary
}

// sideStats summarises a side's run and scores its successful rollouts
// with the Scorer, when there is one.
func (o *PairwiseOptions) sideStats(ctx context.Context, side Side, decoding string, run int, sr sideRun) SideStats {
	st := SideStats{Side: side.Name, Decoding: decoding, Run: run, Rollouts: sr.sum.Rollouts, Failed: sr.sum.Failed,
		AgreementRate: sr.sum.AgreementRate, MeanRounds: sr.sum.MeanRounds, RoundsToAgreement: sr.sum.RoundsToAgree}
	if o.Scorer == nil {
		return st
	}
	var (
		mu    sync.Mutex
		total float64
		wg    sync.WaitGroup
		sem   = make(chan struct{}, o.JudgeConcurrency)
	)
	for _, r := range sr.recs {
		if r == nil || r.Failed {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := o.Scorer.Judge(ctx, r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				st.ScoreFailed++
				return
			}
			st.Scored++
			total += res.Score
		}()
	}
	wg.Wait()
	if st.Scored > 0 {
		m := total / float64(st.Scored)
		st.ScoreMean = &m
	}
	return st
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
	out.sum = sum
	if spec, ok := rollout.Lookup(side.Game.Name()); ok && spec.Negotiates {
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
		l, r := left.recs[c.Index], right.recs[c.Index]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var res reward.PairResult
			var err error
			if rc, ok := judge.(RolloutComparer); ok {
				res, err = rc.CompareRollouts(ctx, l, r)
			} else {
				res, err = judge.Compare(ctx, p.Task, p.Persona("A"), p.Persona("B"), c.LeftFinal, c.RightFinal)
			}
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
