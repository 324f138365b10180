package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/spf13/cobra"
)

func newTrainCmd(a *cli) *cobra.Command {
	var path string
	var resume bool
	cmd := &cobra.Command{
		Use:   "train --config F [--resume]",
		Short: "Run the training loop: roll out, judge, write batches, hand them to the trainer, load its adapters",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path, usesPolicy|usesJudge)
			if err != nil {
				return err
			}
			return app.Train(cmd.Context(), cfg, a.env(cmd, log), app.TrainOptions{ConfigPath: path, Flags: cmd.Flags(), Resume: resume})
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().BoolVar(&resume, "resume", false, "continue the run in run.dir/run.name from its state")
	return cmd
}
