package main

import (
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/app"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// newLeagueCmd is `parley league`: the league's cross-play.
func newLeagueCmd(a *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "league",
		Short: "League self-play tools (roles.<role>.policy: league): cross-play among a run's checkpoints",
	}
	cmd.AddCommand(newCrossPlayCmd(a))
	return cmd
}

// newCrossPlayCmd is `parley league crossplay RUN`.
func newCrossPlayCmd(a *cli) *cobra.Command {
	var o app.CrossPlayOptions
	cmd := &cobra.Command{
		Use:   "crossplay RUN_DIR --endpoint URL",
		Short: "Play a run's checkpoints (and the base model, and the league's frozen agents) against each other in both seats; resumable; writes the cross-play report",
		Long: `The checkpoints of every K-th step (--every, default the league's
snapshot_every) and the base model meet in both seats of the run's game on
the curriculum's held-out rows (all rows when it has none), scored by the
game's own scorer (a game without one, deliberation: the run's judge),
through the tournament engine: RUN_DIR/crossplay/step-N
keeps one file per finished game, so the same command after a kill plays
only the games left. The adapters are loaded on --endpoint, a vLLM server of
its own: never the training's, whose weight updates would abort the games.
The report (report.md beside the games) has the cross-play heatmap sorted as
seed 001's figure 1, the trained policy's league rating over training with
95 % intervals, the worst-case opponent of each checkpoint in each seat and
any non-transitive 3-cycles.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			o.Run, o.Logger = args[0], log
			prog, end := a.tournamentProgress()
			o.Progress = prog
			path, sum, err := app.LeagueCrossPlay(cmd.Context(), o)
			end()
			if err != nil {
				return err
			}
			b, _ := json.Marshal(sum)
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			log.Info("cross-play finished", zap.Int("games", sum.Total), zap.Int("failed", sum.Failed), zap.String("report", path))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Endpoint, "endpoint", "", "vLLM server of its own serving the run's base model (adapters are loaded there)")
	f.IntVar(&o.Every, "every", 0, "keep the checkpoints of every K-th step (0: the league's snapshot_every)")
	f.IntVar(&o.UpTo, "up-to", 0, "last step to include (0: the newest checkpoint)")
	f.IntVar(&o.Rounds, "rounds", 1, "rounds per condition")
	f.IntVar(&o.Concurrency, "concurrency", 8, "games in flight")
	f.StringVar(&o.Out, "out", "", "cross-play directory (default RUN_DIR/crossplay/step-N)")
	_ = cmd.MarkFlagRequired("endpoint")
	return cmd
}
