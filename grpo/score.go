package grpo

import (
	"context"
	"fmt"
	"math"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
)

// ScoreOptions configure ScoreStep.
type ScoreOptions struct {
	// RunID, Step and PolicyVersion stamp the batch rows.
	RunID         string
	Step          int
	PolicyVersion int
	Advantage     AdvantageOptions
	// Mask is dialogue, dialogue+final or final.
	Mask string
	// JudgeConcurrency bounds judge calls in flight.
	JudgeConcurrency int
}

// ScoreResult is what ScoreStep produced: the batch rows and the counts of
// every stage.
type ScoreResult struct {
	Rows      []dataset.BatchRow
	Judge     reward.ScoreStats
	Advantage AdvantageStats
	Batch     BatchStats
}

// ScoreStep judges rollouts (in place: score, rationale, reward and
// advantage are filled), computes group advantages and builds the step's
// batch. A rollout whose judging fails keeps its JudgeError, is left out of
// its group and counted, and is never scored 0. Every rollout is judged
// afresh, so a re-score with another judge replaces the old verdicts; the
// judge's cache makes a repeat with the same judge free.
func ScoreStep(ctx context.Context, j reward.Judge, rs []dataset.Rollout, baseline *RoleBaseline, opts ScoreOptions) (ScoreResult, error) {
	var res ScoreResult
	if opts.PolicyVersion < 0 {
		return res, fmt.Errorf("grpo.ScoreStep: policy version %d", opts.PolicyVersion)
	}
	for i := range rs {
		rs[i].Judged, rs[i].Score, rs[i].Reward, rs[i].Advantage = false, 0, 0, 0
		rs[i].JudgeError, rs[i].JudgeRationale = "", ""
	}
	res.Judge = reward.ScoreAll(ctx, j, rs, opts.JudgeConcurrency)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("grpo.ScoreStep: %w", err)
	}
	for i := range rs {
		if rs[i].Judged && !math.IsNaN(float64(rs[i].Score)) {
			rs[i].Reward = rs[i].Score
		}
		if rs[i].PolicyVersion != int32(opts.PolicyVersion) {
			return res, fmt.Errorf("grpo.ScoreStep: rollout %s was sampled by policy %d, not %d", rs[i].RolloutID, rs[i].PolicyVersion, opts.PolicyVersion)
		}
	}
	kept, adv, err := ComputeAdvantages(rs, opts.Advantage, baseline)
	if err != nil {
		return res, fmt.Errorf("grpo.ScoreStep: %w", err)
	}
	res.Advantage = adv
	rows, bs, err := BuildBatch(kept, BatchOptions{RunID: opts.RunID, Step: opts.Step, PolicyVersion: opts.PolicyVersion, Mask: opts.Mask})
	if err != nil {
		return res, fmt.Errorf("grpo.ScoreStep: %w", err)
	}
	res.Rows, res.Batch = rows, bs
	return res, nil
}
