package main

import (
	"fmt"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
)

// evalOptions are the evaluations parley train runs every train.eval_every
// steps (its value, returned first): the step's adapter plays the
// curriculum's eval split against the base model, greedy, with the run's
// game; the two final completions are compared by the run's judge (an LLM
// judge pairwise, asked in both orders; a rule's or game's scorer by its
// pointwise scores) and each side's rollouts are scored by the run's
// reward judge. With eval_every 0 it returns the zero options. The
// returned func closes the pairwise judge's client.
func evalOptions(cfg config.Config, judge reward.Judge, cacheDir string, log *zap.Logger) (int, harness.StepEvalOptions, func(), error) {
	every := cfg.Train.EvalEvery
	if every <= 0 {
		return 0, harness.StepEvalOptions{}, func() {}, nil
	}
	if spec, ok := rollout.Lookup(cfg.Game.Env); ok && spec.Series != nil {
		return 0, harness.StepEvalOptions{}, nil, fmt.Errorf("train: config key train.eval_every is %d: the %s game trains over series, which the evaluation does not play: set train.eval_every: 0", every, cfg.Game.Env)
	}
	prompts, err := loadSplit(cfg, dataset.SplitEval)
	if err != nil {
		return 0, harness.StepEvalOptions{}, nil, fmt.Errorf("train: config key train.eval_every is %d: the held-out prompts: %w; give the curriculum rows with split eval, or set train.eval_every: 0", every, err)
	}
	dec, err := harness.NewDecodings([]string{report.DecodingGreedy}, sampling(cfg))
	if err != nil {
		return 0, harness.StepEvalOptions{}, nil, fmt.Errorf("train: evaluation decoding: %w", err)
	}
	aspect, closeAspect, err := evalAspect(cfg, judge, cacheDir, log)
	if err != nil {
		return 0, harness.StepEvalOptions{}, nil, err
	}
	log.Info("evaluating during training", zap.Int("every_steps", every), zap.Int("held_out_prompts", len(prompts)),
		zap.String("decoding", dec[0].Name), zap.String("compared_by", aspect.Name), zap.String("judge", judge.Name()))
	return every, harness.StepEvalOptions{
		Prompts: prompts, Set: "curriculum split " + dataset.SplitEval,
		Aspect: aspect, Scorer: judge, Scale: reward.ScaleOf(judge), Decoding: dec[0],
		Concurrency: cfg.Rollout.Concurrency, JudgeConcurrency: cfg.Judge.Concurrency, Seed: cfg.Run.Seed,
	}, closeAspect, nil
}

// The pairwise evaluation is the loop's Evaluator.
var _ train.Evaluator = (*harness.StepEvaluator)(nil)

// loopEval is the loop's evaluations: every `every` steps, o's evaluator
// playing the loop's game with its policy against its base model (ro).
// With every 0 the evaluator only reads the files of an earlier run's
// evaluations, to complete their metrics lines.
func loopEval(every int, o harness.StepEvalOptions, ro rollout.RunnerOptions, progress func(string, int) (func(), func(bool)), log *zap.Logger) (train.EvalOptions, error) {
	if every <= 0 {
		return train.EvalOptions{Evaluator: &harness.StepEvaluator{}}, nil
	}
	o.Game, o.Policy, o.Base, o.ChatTemplateKwargs = ro.Game, ro.Policy, ro.Model, ro.ChatTemplateKwargs
	o.Progress, o.Logger = progress, log.Named("eval")
	ev, err := harness.NewStepEvaluator(o)
	if err != nil {
		return train.EvalOptions{}, fmt.Errorf("train: %w", err)
	}
	return train.EvalOptions{Every: every, Evaluator: ev}, nil
}

// evalAspect is what compares the two sides' finals in an evaluation: for
// judge.kind ca the pairwise Collective Agency judge (both orders, its
// own client on the judge's API and cache), else the run's judge's scores
// (harness.ScoreComparer).
func evalAspect(cfg config.Config, judge reward.Judge, cacheDir string, log *zap.Logger) (harness.Aspect, func(), error) {
	if cfg.Judge.Kind != reward.JudgeCA {
		return harness.Aspect{Name: "score", Judge: harness.ScoreComparer{Judge: judge}}, func() {}, nil
	}
	c, err := chat.New(judgeClient(cfg, cacheDir, log))
	if err != nil {
		return harness.Aspect{}, nil, fmt.Errorf("train: the evaluation's pairwise judge: config key judge: %w", err)
	}
	pj, err := reward.NewPairwiseJudge(c, reward.AspectCollectiveAgency)
	if err != nil {
		_ = c.Close()
		return harness.Aspect{}, nil, fmt.Errorf("train: the evaluation's pairwise judge: %w", err)
	}
	return harness.Aspect{Name: reward.AspectCollectiveAgency, Judge: pj}, func() { _ = c.Close() }, nil
}
