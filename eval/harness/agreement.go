package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/stats"
	"go.uber.org/zap"
)

// DefaultLevels is the number of score levels of the Collective Agency
// rubric (1–5).
const DefaultLevels = 5

// Ways a sample is balanced (AgreementReport.SampleBy).
const (
	SampleByStored = "stored score" // the scores the rollouts file carries
	SampleByJudgeA = "judge A"      // judge A's scores, all eligible rollouts scored first
)

// AgreementOptions configure RunAgreement.
type AgreementOptions struct {
	// JudgeA and JudgeB score the rollouts. For test–retest pass two
	// judges of the same configuration that share no cache, so that the
	// second run really asks again.
	JudgeA, JudgeB reward.Judge
	// Label names the pair in results ("gpt-4o-mini vs. gpt-5.2, run 1").
	Label string
	// Levels is K: scores must be integers in 1..K (default DefaultLevels).
	Levels int
	// Sample, when positive and smaller than the eligible rollouts, judges
	// a sample of that size balanced by score level (BalancedSample): by
	// the stored scores when every eligible rollout has one, else by judge
	// A's scores.
	Sample int
	// Seed seeds the sample.
	Seed int64
	// Concurrency bounds the judge calls in flight per judge (default 16).
	Concurrency int
	Logger      *zap.Logger
}

// AgreementItem is one rollout's pair of scores (0 where a judge failed).
type AgreementItem struct {
	RolloutID string `json:"rollout_id"`
	A         int    `json:"a"`
	B         int    `json:"b"`
	ErrorA    string `json:"error_a,omitempty"`
	ErrorB    string `json:"error_b,omitempty"`
}

// AgreementReport is the outcome of RunAgreement. It embeds the
// report.AgreementResult that eval/report reads (kind, label, n, exact,
// within_one, pearson, kappa); the other fields ride along in the same
// JSON object.
type AgreementReport struct {
	report.AgreementResult
	JudgeA string `json:"judge_a"`
	JudgeB string `json:"judge_b"`
	Levels int    `json:"levels"`
	// Confusion counts score pairs: Confusion[i][j] is the number of
	// rollouts judge A scored i+1 and judge B j+1.
	Confusion [][]int `json:"confusion"`
	// Rollouts is the number read; FailedRollouts of them failed in
	// generation and were not judged.
	Rollouts       int `json:"rollouts"`
	FailedRollouts int `json:"failed_rollouts"`
	// Sampled is the number judged by both; SampleBy how the sample was
	// balanced ("" when every eligible rollout was judged).
	Sampled  int    `json:"sampled"`
	SampleBy string `json:"sample_by,omitempty"`
	// JudgeAFailed and JudgeBFailed count the judging failures (judge A's
	// over every eligible rollout when it balanced the sample: those it
	// failed on are not sampled); Excluded counts the sampled rollouts left
	// out because either judge failed (N = Sampled − Excluded).
	JudgeAFailed int             `json:"judge_a_failed"`
	JudgeBFailed int             `json:"judge_b_failed"`
	Excluded     int             `json:"excluded"`
	Items        []AgreementItem `json:"items"`
}

// RunAgreement scores the final completions of rollouts with both judges
// and computes their agreement (stats.Agree) and confusion matrix. Failed
// rollouts are skipped; a rollout either judge fails to score is excluded
// and counted. A score that is not an integer in 1..Levels is an error
// (agreement needs rubric levels). The rollouts are not modified.
func RunAgreement(ctx context.Context, rollouts []dataset.Rollout, opts AgreementOptions) (AgreementReport, error) {
	if opts.JudgeA == nil || opts.JudgeB == nil {
		return AgreementReport{}, errors.New("harness.RunAgreement: two judges are required")
	}
	if opts.Levels <= 0 {
		opts.Levels = DefaultLevels
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	rep := AgreementReport{
		AgreementResult: report.AgreementResult{Kind: report.KindAgreement, Label: opts.Label},
		JudgeA:          opts.JudgeA.Name(), JudgeB: opts.JudgeB.Name(),
		Levels: opts.Levels, Rollouts: len(rollouts),
	}
	var eligible []dataset.Rollout
	for _, r := range rollouts {
		if r.Failed {
			rep.FailedRollouts++
			continue
		}
		eligible = append(eligible, r) // a copy: judging never touches the caller's

	}
	if len(eligible) == 0 {
		return rep, fmt.Errorf("harness.RunAgreement: none of the %d rollouts can be judged (all failed)", len(rollouts))
	}

	sample := eligible
	var scoredA []dataset.Rollout // judge A's verdicts when scored before sampling
	if opts.Sample > 0 && opts.Sample < len(eligible) {
		stored := true
		for _, r := range eligible {
			stored = stored && r.Judged
		}
		pool := eligible
		var levels []int
		if stored {
			rep.SampleBy = SampleByStored
			for _, r := range eligible {
				levels = append(levels, int(math.Round(float64(r.Score))))
			}
		} else {
			// Judge A scores every eligible rollout; those it fails on
			// leave the pool (counted in JudgeAFailed).
			rep.SampleBy = SampleByJudgeA
			all := slices.Clone(eligible)
			reward.ScoreAll(ctx, opts.JudgeA, all, opts.Concurrency)
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("harness.RunAgreement: %w", err)
			}
			pool = nil
			for _, r := range all {
				if !r.Judged {
					rep.JudgeAFailed++
					continue
				}
				pool = append(pool, r)
				levels = append(levels, int(math.Round(float64(r.Score))))
			}
		}
		idx := BalancedSample(levels, opts.Sample, opts.Seed)
		sample = make([]dataset.Rollout, len(idx))
		for k, i := range idx {
			sample[k] = pool[i]
		}
		if !stored {
			scoredA = sample // already scored by judge A
		}
	}
	rep.Sampled = len(sample)

	a := scoredA
	if a == nil {
		a = slices.Clone(sample)
		reward.ScoreAll(ctx, opts.JudgeA, a, opts.Concurrency)
	}
	b := slices.Clone(sample)
	reward.ScoreAll(ctx, opts.JudgeB, b, opts.Concurrency)
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("harness.RunAgreement: %w", err)
	}

	var xs, ys []int
	for i := range sample {
		it := AgreementItem{RolloutID: sample[i].RolloutID}
		okA, okB := a[i].Judged, b[i].Judged
		if !okA {
			it.ErrorA = a[i].JudgeError
			rep.JudgeAFailed++
		}
		if !okB {
			it.ErrorB = b[i].JudgeError
			rep.JudgeBFailed++
		}
		if okA {
			v, err := scoreLevel(a[i].Score, opts.Levels)
			if err != nil {
				return rep, fmt.Errorf("harness.RunAgreement: judge A (%s) on %s: %w", rep.JudgeA, it.RolloutID, err)
			}
			it.A = v
		}
		if okB {
			v, err := scoreLevel(b[i].Score, opts.Levels)
			if err != nil {
				return rep, fmt.Errorf("harness.RunAgreement: judge B (%s) on %s: %w", rep.JudgeB, it.RolloutID, err)
			}
			it.B = v
		}
		rep.Items = append(rep.Items, it)
		if !okA || !okB {
			rep.Excluded++
			continue
		}
		xs = append(xs, it.A)
		ys = append(ys, it.B)
	}
	if rep.Excluded > 0 {
		log.Warn("rollouts excluded from agreement: a judge failed",
			zap.Int("excluded", rep.Excluded), zap.Int("judge_a_failed", rep.JudgeAFailed), zap.Int("judge_b_failed", rep.JudgeBFailed))
	}
	if len(xs) == 0 {
		return rep, fmt.Errorf("harness.RunAgreement: no rollout was scored by both judges (%d by A, %d by B failed)", rep.JudgeAFailed, rep.JudgeBFailed)
	}
	ag, err := stats.Agree(xs, ys, opts.Levels)
	if err != nil {
		return rep, fmt.Errorf("harness.RunAgreement: %w", err)
	}
	rep.Agreement = ag
	if rep.Confusion, err = stats.ConfusionMatrix(xs, ys, opts.Levels); err != nil {
		return rep, fmt.Errorf("harness.RunAgreement: %w", err)
	}
	return rep, nil
}

// scoreLevel checks that a score is an integer in 1..k.
func scoreLevel(score float32, k int) (int, error) {
	v := math.Round(float64(score))
	if math.Abs(float64(score)-v) > 1e-6 || v < 1 || v > float64(k) {
		return 0, fmt.Errorf("score %v is not an integer in 1..%d (agreement needs rubric levels)", score, k)
	}
	return int(v), nil
}

// BalancedSample picks n indices of levels, as evenly spread over the
// distinct levels as their sizes allow: levels are visited in ascending
// order, round after round, each giving one index (drawn without
// replacement in a seeded order) until n are picked; a level that runs out
// drops out and the others fill its share. With n ≥ len(levels) every
// index is returned. The result is sorted and depends only on (levels, n,
// seed).
func BalancedSample(levels []int, n int, seed int64) []int {
	if n >= len(levels) {
		out := make([]int, len(levels))
		for i := range out {
			out[i] = i
		}
		return out
	}
	byLevel := map[int][]int{}
	for i, l := range levels {
		byLevel[l] = append(byLevel[l], i)
	}
	keys := make([]int, 0, len(byLevel))
	for l := range byLevel {
		keys = append(keys, l)
	}
	slices.Sort(keys)
	rng := rand.New(rand.NewPCG(uint64(rollout.DeriveSeed(seed, "eval/agreement/sample", 0)), 0x6167726565))
	for _, l := range keys {
		idx := byLevel[l]
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	out := make([]int, 0, n)
	for len(out) < n {
		for _, l := range keys {
			if len(out) == n {
				break
			}
			if idx := byLevel[l]; len(idx) > 0 {
				out = append(out, idx[0])
				byLevel[l] = idx[1:]
			}
		}
	}
	slices.Sort(out)
	return out
}
