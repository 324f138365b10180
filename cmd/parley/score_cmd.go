package main

import (
	"github.com/parleyhq/parley/app"
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
