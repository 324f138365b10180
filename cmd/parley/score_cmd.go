package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/dataset"
	"github.com/spf13/cobra"
)

func newScoreCmd(a *cli) *cobra.Command {
	var path, in, out string
	var step, policyVersion int
	var force bool
	cmd := &cobra.Command{
		Use:   "score --config F --in ROLLOUTS.parquet --out DIR",
		Short: "Judge a rollouts parquet, compute advantages and write the batch (re-score without rolling out again)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path, usesJudge)
			if err != nil {
				return err
			}
			return app.Score(cmd.Context(), cfg, a.env(cmd, log), app.ScoreOptions{In: in, Out: out, Step: step, PolicyVersion: policyVersion, Force: force})
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

const exportLong = `Exports rollouts as JSONL (one rollout a line, its dialogue as chat
messages) or as a Hugging Face dataset folder (parquet shards and a README.md
card), streaming, in constant memory.

--from takes a run directory (RUN/rollouts/step-N.parquet: parley train, or
parley score's --out), the output directory of parley rollout
(DIR/rollouts.parquet), or a rollouts parquet file; --in takes rollouts files
one by one instead. Scores are labelled by the scale their judge gave them on
(CA 1–5, rule <kind> 0–1), as recorded in the rollouts files or, for older
files, by the run directory's config.yaml.`

func newExportCmd(a *cli) *cobra.Command {
	var o dataset.ExportOptions
	var minReward float64
	var where []string
	var force bool
	cmd := &cobra.Command{
		Use:   "export --from RUN|DIR|FILE [--in FILE]... --format jsonl|hf --out DIR",
		Short: "Export rollouts (a run's, parley rollout's, or files) as JSONL chat messages or a Hugging Face dataset folder",
		Long:  exportLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("min-reward") {
				o.MinReward = &minReward
			}
			return app.Export(cmd.Context(), a.env(cmd, log), o, where, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "a run directory (RUN/rollouts/step-*.parquet), parley rollout's output directory (DIR/rollouts.parquet), or a rollouts file")
	f.StringArrayVar(&o.In, "in", nil, "a rollouts parquet file, repeatable (instead of --from)")
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
	f.BoolVar(&force, "force", false, "replace what --out holds")
	return cmd
}
