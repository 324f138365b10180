package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
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
			rs, err := dataset.ReadAllRollouts(in)
			if err != nil {
				return err
			}
			if len(rs) == 0 {
				return fmt.Errorf("score: %s holds no rollouts", in)
			}
			if step < 0 {
				step = max(int(rs[0].Step), 1) // trainers take steps from 1
			}
			if policyVersion < 0 {
				policyVersion = int(rs[0].PolicyVersion)
				for _, r := range rs {
					if int(r.PolicyVersion) != policyVersion {
						return fmt.Errorf("score: %s mixes policy versions %d and %d (rollout %s): pass --policy-version to score them as one", in, policyVersion, r.PolicyVersion, r.RolloutID)
					}
				}
			}
			if _, err := os.Stat(dataset.ReadyPath(filepath.Join(out, dataset.BatchesDir), step)); err == nil && !force {
				return fmt.Errorf("score: %s already holds a batch for step %d (a trainer may have taken it): pass --force to replace it", out, step)
			}
			for i := range rs {
				rs[i].Step, rs[i].PolicyVersion = int32(step), int32(policyVersion)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("score: %w", err)
			}
			judge, closeJudge, err := newJudge(cfg, out, log)
			if err != nil {
				return err
			}
			defer closeJudge()
			res, err := grpo.ScoreStep(cmd.Context(), judge, rs, grpo.NewRoleBaseline(), grpo.ScoreOptions{
				RunID: cfg.Run.Name, Step: step, PolicyVersion: policyVersion,
				Advantage:        advantageOptions(cfg.GRPO),
				Mask:             cfg.GRPO.Mask,
				JudgeConcurrency: cfg.Judge.Concurrency,
			})
			if err != nil {
				return err
			}
			w, err := dataset.NewRolloutWriter(dataset.RolloutsPath(filepath.Join(out, dataset.RolloutsDir), step), dataset.RolloutWriterOptions{Logger: log})
			if err != nil {
				return err
			}
			if err := w.Write(rs...); err != nil {
				w.Abort()
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			ready, err := dataset.WriteBatch(filepath.Join(out, dataset.BatchesDir), step, policyVersion, res.Rows)
			if err != nil {
				return err
			}
			summary := map[string]any{"judge": res.Judge, "advantage": res.Advantage, "batch": res.Batch, "ready": ready}
			b, _ := json.MarshalIndent(summary, "", "  ")
			if err := os.WriteFile(filepath.Join(out, "score-summary.json"), append(b, '\n'), 0o644); err != nil {
				return fmt.Errorf("score: %w", err)
			}
			log.Info("scored",
				zap.Int("judged", res.Judge.Judged), zap.Int("judge_failed", res.Judge.Failed), zap.Int("cached", res.Judge.Cached),
				zap.Int("groups", res.Advantage.Groups), zap.Int("dropped_zero_variance", res.Advantage.DroppedZeroVariance),
				zap.Float64("score_mean", res.Advantage.ScoreMean), zap.Int("rows", ready.Rows), zap.Int64("tokens", ready.Tokens),
				zap.String("batch", dataset.BatchPath(filepath.Join(out, dataset.BatchesDir), step)))
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
	return cmd
}
