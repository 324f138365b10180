package main

import (
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/train"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newScoreCmd(a *app) *cobra.Command {
	var path, in, out string
	var step, policyVersion int
	var force bool
	cmd := &cobra.Command{
		Use:   "score --config F --in ROLLOUTS.parquet --out DIR",
		Short: "Judge a rollouts parquet, compute advantages and write the batch (re-score without rolling out again)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			if in == "" || out == "" {
				return fmt.Errorf("score: --in and --out are required")
			}
			judge, closeJudge, err := newJudge(cfg, out, log)
			if err != nil {
				return err
			}
			defer closeJudge()
			sum, err := train.Rescore(cmd.Context(), train.RescoreOptions{
				In: in, Out: dataset.RunDir(out), Step: step, PolicyVersion: policyVersion, Force: force,
				Score: train.ScoreOptions{RunID: cfg.Run.Name, Advantage: advantageOptions(cfg.GRPO), Mask: cfg.GRPO.Mask, JudgeConcurrency: cfg.Judge.Concurrency},
				Judge: judge, Logger: log,
			})
			if err != nil {
				return err
			}
			log.Info("scored",
				zap.Int("judged", sum.Judge.Judged), zap.Int("judge_failed", sum.Judge.Failed), zap.Int("cached", sum.Judge.Cached),
				zap.Int("groups", sum.Advantage.Groups), zap.Int("dropped_zero_variance", sum.Advantage.DroppedZeroVariance),
				zap.Float64("score_mean", sum.Advantage.ScoreMean), zap.Int("rows", sum.Ready.Rows), zap.Int64("tokens", sum.Ready.Tokens),
				zap.String("batch", sum.BatchPath))
			return nil
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().StringVar(&in, "in", "", "rollouts parquet to score")
	cmd.Flags().StringVar(&out, "out", "", "output directory: batches/, rollouts/, the judge cache and score-summary.json")
	cmd.Flags().IntVar(&step, "step", -1, "step number of the batch (default: the rollouts' step, at least 1)")
	cmd.Flags().IntVar(&policyVersion, "policy-version", -1, "policy version (default: the rollouts')")
	cmd.Flags().BoolVar(&force, "force", false, "replace a batch already written for the step")
	return cmd
}

func newExportCmd(a *app) *cobra.Command {
	var o dataset.ExportOptions
	var minReward float64
	var where []string
	cmd := &cobra.Command{
		Use:   "export --from RUN --format jsonl|hf --out DIR",
		Short: "Export a run's rollouts as JSONL chat messages or a Hugging Face dataset folder (streaming)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("min-reward") {
				o.MinReward = &minReward
			}
			for _, w := range where {
				c, err := dataset.ParseCondition(w)
				if err != nil {
					return fmt.Errorf("export: flag --where: %w", err)
				}
				o.Where = append(o.Where, c)
			}
			if (len(o.Where) > 0 || len(o.Models) > 0 || o.Traces) && o.Role == "" {
				return fmt.Errorf("export: --where, --model and --traces need --role")
			}
			o.Logger = log
			st, err := dataset.Export(cmd.Context(), o)
			if err != nil {
				return err
			}
			log.Info("exported", zap.Int64("read", st.Read), zap.Int64("written", st.Written),
				zap.Int64("skipped_failed", st.SkippedFailed), zap.Int64("skipped_filters", st.SkippedFilters),
				zap.Strings("outputs", st.Outputs))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "run directory (reads RUN/rollouts/step-*.parquet)")
	f.StringVar(&o.Format, "format", "jsonl", "jsonl or hf")
	f.StringVar(&o.Out, "out", "", "output directory (or .jsonl file)")
	f.IntVar(&o.MinStep, "min-step", 0, "first step to export")
	f.IntVar(&o.MaxStep, "max-step", 0, "last step to export (0: no limit)")
	f.Float64Var(&minReward, "min-reward", 0, "keep rollouts with at least this reward")
	f.BoolVar(&o.AgreedOnly, "agreed-only", false, "keep only rollouts whose agents agreed")
	f.BoolVar(&o.IncludeFailed, "include-failed", false, "keep failed rollouts too")
	f.StringVar(&o.Role, "role", "", "export each rollout as this role's chat, with its reward (for example holder)")
	f.StringSliceVar(&o.Models, "model", nil, "with --role: keep rollouts where the role was played by these models (a tournament's agent names)")
	f.StringArrayVar(&where, "where", nil, "with --role: keep rollouts whose role outcome meets KEY OP VALUE, e.g. share_given<=0.01 (repeatable)")
	f.BoolVar(&o.Traces, "traces", false, "with --role: keep the role's private <think> traces")
	return cmd
}
