package train

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// ScoreOptions configure ScoreStep.
type ScoreOptions struct {
	// RunID, Step and PolicyVersion stamp the batch rows.
	RunID         string
	Step          int
	PolicyVersion int
	Advantage     grpo.AdvantageOptions
	// Mask is dialogue, dialogue+final or final.
	Mask string
	// JudgeConcurrency bounds judge calls in flight.
	JudgeConcurrency int
	// OnJudged, if set, is called after each rollout is judged (progress).
	OnJudged func()
	// MixedVersions lets the rollouts carry any policy version (a
	// streaming batch's groups); each row then records its rollout's, and
	// PolicyVersion is the batch's oldest.
	MixedVersions bool
	// Untrained names groups (GroupID) kept out of the batch although
	// they have advantages: dynamic sampling's groups beyond the batch's.
	Untrained map[string]bool
}

// ScoreResult is what ScoreStep produced: the batch rows and the counts of
// every stage.
type ScoreResult struct {
	Rows      []dataset.BatchRow
	Judge     reward.ScoreStats
	Advantage grpo.AdvantageStats
	Batch     grpo.BatchStats
	// Scale is the judge's score scale, recorded in the rollouts file.
	Scale dataset.ScoreScale
}

// ScoreStep judges rollouts (in place: score, rationale, reward and
// advantage are filled), computes group advantages and builds the step's
// batch. A rollout whose judging fails keeps its JudgeError, is left out of
// its group and counted, and is never scored 0. Every rollout is judged
// afresh, so a re-score with another judge replaces the old verdicts; the
// judge's cache makes a repeat with the same judge free.
func ScoreStep(ctx context.Context, j reward.Judge, rs []dataset.Rollout, baseline *grpo.RoleBaseline, opts ScoreOptions) (ScoreResult, error) {
	if opts.PolicyVersion < 0 {
		return ScoreResult{Scale: reward.ScaleOf(j)}, fmt.Errorf("train.ScoreStep: policy version %d", opts.PolicyVersion)
	}
	st, err := JudgeRollouts(ctx, j, rs, opts.JudgeConcurrency, opts.OnJudged)
	if err != nil {
		return ScoreResult{Scale: reward.ScaleOf(j), Judge: st}, fmt.Errorf("train.ScoreStep: %w", err)
	}
	res, err := BuildJudged(rs, baseline, opts)
	res.Judge, res.Scale = st, reward.ScaleOf(j)
	return res, err
}

// JudgeRollouts judges rs afresh, in place: earlier verdicts are cleared,
// then each rollout that did not fail is judged (concurrency calls in
// flight, onDone after each) and every scored role's reward set to its
// score. It fails only when ctx is done.
func JudgeRollouts(ctx context.Context, j reward.Judge, rs []dataset.Rollout, concurrency int, onDone func()) (reward.ScoreStats, error) {
	for i := range rs {
		rs[i].Judged, rs[i].Score, rs[i].JudgeError, rs[i].JudgeRationale = false, 0, "", ""
		for k := range rs[i].Roles {
			ro := &rs[i].Roles[k]
			ro.Scored, ro.Score, ro.Reward, ro.Advantage = false, 0, 0, 0
		}
	}
	st := reward.ScoreAllFunc(ctx, j, rs, concurrency, onDone)
	if err := ctx.Err(); err != nil {
		return st, err
	}
	for i := range rs {
		for k := range rs[i].Roles {
			// The reward of a role is its score.
			if ro := &rs[i].Roles[k]; ro.Scored {
				ro.Reward = ro.Score
			}
		}
	}
	return st, nil
}

// BuildJudged computes the group advantages of judged rollouts
// (JudgeRollouts) and builds the step's batch from the groups that keep
// one, leaving out those opts.Untrained names (their advantages set to 0).
// Its result has no judging counts.
func BuildJudged(rs []dataset.Rollout, baseline *grpo.RoleBaseline, opts ScoreOptions) (ScoreResult, error) {
	var res ScoreResult
	for i := range rs {
		if !opts.MixedVersions && rs[i].PolicyVersion != int32(opts.PolicyVersion) {
			return res, fmt.Errorf("train.ScoreStep: rollout %s was sampled by policy %d, not %d", rs[i].RolloutID, rs[i].PolicyVersion, opts.PolicyVersion)
		}
	}
	kept, adv, err := grpo.ComputeAdvantages(rs, opts.Advantage, baseline)
	if err != nil {
		return res, fmt.Errorf("train.ScoreStep: %w", err)
	}
	res.Advantage = adv
	if len(opts.Untrained) > 0 {
		kept = slices.DeleteFunc(kept, func(r dataset.Rollout) bool { return opts.Untrained[r.GroupID] })
		for i := range rs {
			if opts.Untrained[rs[i].GroupID] {
				for k := range rs[i].Roles {
					rs[i].Roles[k].Advantage = 0
				}
			}
		}
	}
	rows, bs, err := grpo.BuildBatch(kept, grpo.BatchOptions{RunID: opts.RunID, Step: opts.Step, PolicyVersion: opts.PolicyVersion, MixedVersions: opts.MixedVersions, Mask: opts.Mask})
	if err != nil {
		return res, fmt.Errorf("train.ScoreStep: %w", err)
	}
	res.Rows, res.Batch = rows, bs
	return res, nil
}

// WriteStep writes a scored step into the run directory d, in the order that
// makes each file final only when what it needs is written: the rollouts
// (rollouts/step-N.parquet, recording the judge's score scale), then
// sidecar (rollouts/step-N.metrics.json, when not nil), then the batch and
// last its .ready marker.
func WriteStep(d dataset.RunDir, step, policyVersion int, rs []dataset.Rollout, rows []dataset.BatchRow, scale dataset.ScoreScale, sidecar []byte, log *zap.Logger) (dataset.Ready, error) {
	w, err := dataset.NewRolloutWriter(d.RolloutsPath(step), dataset.RolloutWriterOptions{Logger: log, Scale: scale})
	if err != nil {
		return dataset.Ready{}, err
	}
	if err := w.Write(rs...); err != nil {
		w.Abort()
		return dataset.Ready{}, err
	}
	if err := w.Close(); err != nil {
		return dataset.Ready{}, err
	}
	if sidecar != nil {
		if err := fsutil.WriteFileAtomic(d.SidecarPath(step), sidecar, 0o644); err != nil {
			return dataset.Ready{}, err
		}
	}
	crashpoint.Hit("before-batch") // the rollouts and the sidecar written, the batch not
	return dataset.WriteBatch(d.BatchPath(step), step, policyVersion, rows)
}

// RescoreOptions configure Rescore.
type RescoreOptions struct {
	// In is the rollouts parquet to judge again.
	In string
	// Out is the directory the step is written to, laid out as a run
	// directory (batches/, rollouts/), with score-summary.json.
	Out dataset.RunDir
	// Step and PolicyVersion stamp the batch; negative takes the rollouts'
	// (the step at least 1).
	Step, PolicyVersion int
	// Force replaces a batch already written for the step.
	Force bool
	// MaxFailedFraction fails the rescoring, writing nothing, when more
	// than this share of the rollouts failed (in sampling or judging);
	// 0 means 0.5.
	MaxFailedFraction float64
	// Score configures judging, advantages and the mask; its Step and
	// PolicyVersion are set by Rescore.
	Score ScoreOptions
	Judge reward.Judge
	// JudgeCost, when set, prices the judge's tokens (config judge.price)
	// in the summary's JudgeAPI.
	JudgeCost func(promptTokens, completionTokens int64) float64
	// Progress, if set, starts the judging progress bar (as LoopOptions'):
	// its tick is called once per rollout, its end when judging is done.
	Progress func(label string, total int) (tick func(), end func(failed bool))
	Logger   *zap.Logger
}

// RescoreSummary is what Rescore did (written to score-summary.json).
type RescoreSummary struct {
	Judge     reward.ScoreStats   `json:"judge"`
	Advantage grpo.AdvantageStats `json:"advantage"`
	Batch     grpo.BatchStats     `json:"batch"`
	Ready     dataset.Ready       `json:"ready"`
	// BatchPath is the batch file written.
	BatchPath string `json:"batch_path"`
	// JudgeAPI is what the judge's API was asked and paid, under the step
	// line's judge/ keys (metrics.JudgePrefix); absent when the judge asks
	// no LLM.
	JudgeAPI map[string]any `json:"judge_api,omitempty"`
}

// Rescore judges a rollouts file again, computes advantages and writes the
// step's rollouts and batch under opts.Out (`parley score`): the same steps
// as a training step after sampling.
func Rescore(ctx context.Context, opts RescoreOptions) (RescoreSummary, error) {
	var sum RescoreSummary
	rs, err := dataset.ReadAllRollouts(opts.In)
	if err != nil {
		return sum, err
	}
	if len(rs) == 0 {
		return sum, fmt.Errorf("train.Rescore: %s holds no rollouts", opts.In)
	}
	step, pv, err := rescoreStep(opts, rs)
	if err != nil {
		return sum, err
	}
	if _, err := os.Stat(opts.Out.ReadyPath(step)); err == nil && !opts.Force {
		return sum, fmt.Errorf("train.Rescore: %s already holds a batch for step %d (a trainer may have taken it): pass --force to replace it", opts.Out, step)
	}
	for i := range rs {
		rs[i].Step, rs[i].PolicyVersion = int32(step), int32(pv)
	}
	if err := opts.Out.Create(); err != nil {
		return sum, err
	}
	so := opts.Score
	so.Step, so.PolicyVersion = step, pv
	end := func(bool) {}
	if opts.Progress != nil {
		so.OnJudged, end = opts.Progress("judging", len(rs))
	}
	jm := newJudgeMeter(opts.Judge, opts.JudgeCost, 0, opts.Logger)
	res, err := ScoreStep(ctx, opts.Judge, rs, grpo.NewRoleBaseline(), so)
	end(err != nil || ctx.Err() != nil)
	if err != nil {
		return sum, err
	}
	if err := checkFailed(rs, res, opts.MaxFailedFraction); err != nil {
		return sum, fmt.Errorf("train.Rescore %s: %w", opts.In, err)
	}
	if len(res.Rows) == 0 {
		return sum, fmt.Errorf("train.Rescore %s: no batch written: no rollout has a trainable sequence with an advantage "+
			"(%d groups, %d dropped for zero variance, %d rollouts failed or unjudged)",
			opts.In, res.Advantage.Groups, res.Advantage.DroppedZeroVariance, res.Advantage.Excluded)
	}
	ready, err := WriteStep(opts.Out, step, pv, rs, res.Rows, res.Scale, nil, opts.Logger)
	if err != nil {
		return sum, err
	}
	sum = RescoreSummary{Judge: res.Judge, Advantage: res.Advantage, Batch: res.Batch, Ready: ready, BatchPath: opts.Out.BatchPath(step)}
	if jm != nil {
		api := metrics.Line{}
		jm.add(step, api)
		delete(api, metrics.KeyJudgeCostTotal) // one step: its cost is the total
		sum.JudgeAPI = api.Strings()
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return sum, fmt.Errorf("train.Rescore: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(opts.Out.Root(), "score-summary.json"), append(b, '\n'), 0o644); err != nil {
		return sum, err
	}
	return sum, nil
}

// rescoreStep is the step and policy version Rescore stamps rs with:
// opts', or when negative the rollouts' (the step at least 1; one policy
// version for all).
func rescoreStep(opts RescoreOptions, rs []dataset.Rollout) (step, pv int, err error) {
	step, pv = opts.Step, opts.PolicyVersion
	if step < 0 {
		step = max(int(rs[0].Step), 1) // trainers take steps from 1
	}
	if pv < 0 {
		pv = int(rs[0].PolicyVersion)
		for _, r := range rs {
			if int(r.PolicyVersion) != pv {
				return 0, 0, fmt.Errorf("train.Rescore: %s mixes policy versions %d and %d (rollout %s): pass --policy-version to score them as one", opts.In, pv, r.PolicyVersion, r.RolloutID)
			}
		}
	}
	return step, pv, nil
}

// checkFailed is the train.max_failed_fraction rule: an error naming the
// counts and the first failure when more than max (0: 0.5) of rs failed in
// sampling or judging.
func checkFailed(rs []dataset.Rollout, res ScoreResult, max float64) error {
	if max <= 0 {
		max = 0.5
	}
	sampled := 0
	for _, r := range rs {
		if r.Failed {
			sampled++
		}
	}
	failed := sampled + res.Judge.Failed
	if float64(failed) <= max*float64(len(rs)) {
		return nil
	}
	return fmt.Errorf("%d of %d rollouts failed (%d sampling, %d judging), more than train.max_failed_fraction %g; first error: %s",
		failed, len(rs), sampled, res.Judge.Failed, max, firstError(rs))
}
