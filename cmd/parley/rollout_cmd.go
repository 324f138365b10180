package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newRolloutCmd(a *app) *cobra.Command {
	var path, out string
	var prompts, group int
	cmd := &cobra.Command{
		Use:   "rollout --config F --out DIR",
		Short: "Sample G rollouts per prompt row and write DIR/rollouts.parquet and DIR/summary.json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			if out == "" {
				return fmt.Errorf("rollout: --out DIR is required")
			}
			if group > 0 {
				cfg.Rollout.GroupSize = group
			}
			rows, err := loadCurriculum(cfg)
			if err != nil {
				return err
			}
			if prompts > 0 {
				rows = rollout.SelectPrompts(rows, cfg.Curriculum.Mix, prompts, cfg.Run.Seed, 0)
			}
			policy, err := newPolicy(cfg, log)
			if err != nil {
				return err
			}
			defer policy.Close()
			ro, closePlayers, err := runnerOptions(cfg, policy, log)
			if err != nil {
				return err
			}
			defer closePlayers()
			sum, err := runRollouts(cmd.Context(), a, rolloutJob{
				opts:    ro,
				prompts: rows,
				path:    filepath.Join(out, "rollouts.parquet"),
				log:     log,
			})
			if err != nil {
				return err
			}
			return reportRollouts(sum, policy.Stats(), out, log)
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().StringVar(&out, "out", "", "output directory")
	cmd.Flags().IntVar(&prompts, "prompts", 0, "number of prompt rows to draw with the curriculum mix (0: every row once)")
	cmd.Flags().IntVar(&group, "group-size", 0, "rollouts per row (0: rollout.group_size)")
	return cmd
}

// reportRollouts logs the rollout summary and writes OUT/summary.json; an
// interrupted run is an error.
func reportRollouts(sum rollout.Summary, st llm.Stats, out string, log *zap.Logger) error {
	log.Info("rollout summary",
		zap.Int("rollouts", sum.Rollouts), zap.Int("failed", sum.Failed), zap.Int("interrupted", sum.Interrupted),
		zap.Float64("agreement_rate", sum.AgreementRate), zap.Float64("rounds_to_agreement", sum.RoundsToAgree),
		zap.Int64("prompt_tokens", sum.PromptTokens), zap.Int64("sampled_tokens", sum.SampledTokens),
		zap.Int64("prefix_breaks", sum.PrefixBreaks), zap.Float64("sequences_per_rollout", sum.SequencesPerRollout),
		zap.Float64("trainer_tokens_per_sampled_token", sum.TrainerTokensPerSampled),
		zap.Int64("requests", sum.Requests), zap.Int64("retries", st.Retries),
		zap.Duration("elapsed", sum.Elapsed), zap.Float64("rollouts_per_second", sum.PerSecond))
	for cause, n := range sum.Errors {
		log.Warn("rollouts failed", zap.Int("count", n), zap.String("cause", cause))
	}
	b, _ := json.MarshalIndent(sum, "", "  ")
	if err := fsutil.WriteFileAtomic(filepath.Join(out, "summary.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("rollout: write summary: %w", err)
	}
	if sum.Interrupted > 0 {
		return fmt.Errorf("rollout: interrupted: %d rollouts written to %s, %d not run: %w", sum.Rollouts, out, sum.Interrupted, context.Canceled)
	}
	return nil
}

// rolloutJob is one set of rollouts streamed to a parquet file.
type rolloutJob struct {
	opts    rollout.RunnerOptions
	prompts []dataset.Prompt
	path    string
	log     *zap.Logger
	// keep, if set, receives every written rollout (for judging in memory).
	keep func(*dataset.Rollout)
}

// runRollouts plays the rollouts and streams them to job.path, closing the
// file (valid, holding what finished) even when interrupted.
func runRollouts(ctx context.Context, a *app, job rolloutJob) (rollout.Summary, error) {
	runner, err := rollout.NewRunner(job.opts)
	if err != nil {
		return rollout.Summary{}, err
	}
	w, err := dataset.NewRolloutWriter(job.path, dataset.RolloutWriterOptions{Logger: job.log})
	if err != nil {
		return rollout.Summary{}, err
	}
	bars := a.bars()
	bar := bars.Add("rollouts", int64(len(job.prompts)*job.opts.GroupSize))
	sum, runErr := runner.Run(ctx, job.prompts, func(r *dataset.Rollout) error {
		bar.Increment()
		if job.keep != nil {
			job.keep(r)
		}
		return w.Write(*r)
	})
	if sum.Interrupted > 0 {
		bar.Abort()
	}
	bars.Wait()
	if runErr != nil {
		w.Abort()
		return sum, runErr
	}
	if err := w.Close(); err != nil {
		return sum, err
	}
	return sum, nil
}
