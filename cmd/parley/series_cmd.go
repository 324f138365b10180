package main

import (
	"fmt"

	"github.com/parleyhq/parley/app"
	"github.com/spf13/cobra"
)

// newSeriesCmd is `parley series`: repeated games whose state carries over.
func newSeriesCmd(a *cli) *cobra.Command {
	var (
		path, out string
		n         int
	)
	cmd := &cobra.Command{
		Use:   "series --config F --out DIR [--series N]",
		Short: "Play series of repeated games whose state carries over (seed 002's trust), resumably, and write DIR/rollouts for parley report",
		Long: `The game lays out the series (for the multiparty game: N series per scenario
type and trust condition of game.multiparty.conditions, each of
game.multiparty.series_length games, paired across conditions). Every game
is recorded under DIR/series/<series>/ as it ends; run the same command
again to resume an interrupted run; it also plays again the games recorded
as failed (and the rest of their series, which followed from the state
before them). Failed games make the command fail. At the end all rollouts go to
DIR/rollouts/step-000000.parquet and the config to DIR/config.yaml, so
'parley report DIR' draws the game's figures and tables.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			sum, err := app.Series(cmd.Context(), cfg, a.env(cmd, log), out, n)
			if sum.Series > 0 {
				retried := ""
				if sum.Retried > 0 {
					retried = fmt.Sprintf(" (%d played again: failed, or after a failed game)", sum.Retried)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d series, %d games played%s, %d resumed, %d failed\n", out, sum.Series, sum.Played, retried, sum.Resumed, sum.Failed)
			}
			return err
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().StringVar(&out, "out", "", "output directory (resumed when it holds the same series)")
	cmd.Flags().IntVar(&n, "series", 1, "series per scenario type and condition")
	return cmd
}
