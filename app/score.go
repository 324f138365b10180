package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/train"
)

// runScale is the score scale of the run directory dir by its frozen
// config.yaml: the zero scale when dir is not a run directory with one.
func runScale(dir string) (dataset.ScoreScale, error) {
	b, err := textfile.ReadFile(dataset.RunDir(dir).ConfigPath())
	if dir == "" || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return dataset.ScoreScale{}, nil
	}
	if err != nil {
		return dataset.ScoreScale{}, err
	}
	s, err := config.ScoreScaleOf(b)
	if err != nil {
		return dataset.ScoreScale{}, fmt.Errorf("%s: %w", dataset.RunDir(dir).ConfigPath(), err)
	}
	return s, nil
}

// ScoreOptions are `parley score`'s settings beside the config.
type ScoreOptions struct {
	// In is the rollouts parquet, Out the output directory; Step and
	// PolicyVersion override the rollouts' (negative: theirs); Force
	// replaces a batch already written.
	In, Out             string
	Step, PolicyVersion int
	Force               bool
}

// Score judges a rollouts file, computes advantages and writes the batch
// (train.Rescore).
func Score(ctx context.Context, cfg config.Config, env Env, o ScoreOptions) error {
	log := env.log()
	if o.In == "" || o.Out == "" {
		return fmt.Errorf("score: --in and --out are required")
	}
	if err := dataset.CheckRolloutsFile(o.In); err != nil {
		return fmt.Errorf("score: --in: %w", err)
	}
	if err := preflightJudge(ctx, cfg, log); err != nil {
		return fmt.Errorf("score: %w", err)
	}
	judge, closeJudge, err := newJudge(cfg, o.Out, nil, log)
	if err != nil {
		return err
	}
	defer closeJudge()
	bars := env.bars()
	sum, err := train.Rescore(ctx, train.RescoreOptions{
		In: o.In, Out: dataset.RunDir(o.Out), Step: o.Step, PolicyVersion: o.PolicyVersion, Force: o.Force,
		MaxFailedFraction: cfg.Train.MaxFailedFraction,
		Score:             train.ScoreOptions{RunID: cfg.Run.Name, Advantage: advantageOptions(cfg.GRPO), Mask: cfg.GRPO.Mask, JudgeConcurrency: cfg.Judge.Concurrency},
		Judge:             judge, JudgeCost: judgeCost(cfg), Progress: bars.Start, Logger: log,
	})
	bars.Wait()
	if err != nil {
		return err
	}
	env.summarize(summary.New("score").
		Add("judged", sum.Judge.Judged).AddIf(sum.Judge.Failed > 0, "judge failed", sum.Judge.Failed).AddIf(sum.Judge.Cached > 0, "from cache", sum.Judge.Cached).
		Add("groups", sum.Advantage.Groups).Add("dropped (zero variance)", sum.Advantage.DroppedZeroVariance).
		Add("score mean", sum.Advantage.ScoreMean).Add("rows", sum.Ready.Rows).Add("tokens", sum.Ready.Tokens).
		Add("batch", sum.BatchPath).
		AddIf(sum.JudgeAPI != nil, "judge calls", sum.JudgeAPI[string(metrics.KeyJudgeCalls)]).
		AddIf(sum.JudgeAPI != nil, "judge tokens (prompt, completion)", fmt.Sprint(sum.JudgeAPI[string(metrics.KeyJudgePromptTokens)], ", ", sum.JudgeAPI[string(metrics.KeyJudgeCompletionTokens)])).
		AddIf(sum.JudgeAPI[string(metrics.KeyJudgeCost)] != nil, "judge cost", sum.JudgeAPI[string(metrics.KeyJudgeCost)]))
	return nil
}

// judgeCost prices the judge's tokens at judge.price; nil when unset.
func judgeCost(cfg config.Config) func(prompt, completion int64) float64 {
	if !cfg.Judge.Price.Set() {
		return nil
	}
	return cfg.Judge.Price.Cost
}
