package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/spf13/cobra"
)

func newRolloutCmd(a *cli) *cobra.Command {
	var path, out string
	var prompts, group int
	var force bool
	cmd := &cobra.Command{
		Use:   "rollout --config F --out DIR",
		Short: "Sample G rollouts per prompt row and write DIR/rollouts.parquet and DIR/summary.json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path, usesPolicy)
			if err != nil {
				return err
			}
			return app.Rollout(cmd.Context(), cfg, a.env(cmd, log), app.RolloutOptions{Out: out, Force: force, Prompts: prompts, GroupSize: group})
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().StringVar(&out, "out", "", "output directory")
	cmd.Flags().IntVar(&prompts, "prompts", 0, "number of prompt rows to draw with the curriculum mix (0: every row once)")
	cmd.Flags().IntVar(&group, "group-size", 0, "rollouts per row (0: rollout.group_size)")
	cmd.Flags().BoolVar(&force, "force", false, "replace what --out holds (without it, the rollouts an interrupted run left there are kept and the rest played)")
	return cmd
}
