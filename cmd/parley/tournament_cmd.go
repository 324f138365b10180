package main

import (
	"sync"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/internal/progress"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/spf13/cobra"
)

// newTournamentCmd is `parley tournament`: seed 001's round robin.
func newTournamentCmd(a *cli) *cobra.Command {
	var (
		agents, dir string
		retryFailed bool
	)
	cmd := &cobra.Command{
		Use:   "tournament --agents FILE --dir DIR",
		Short: "Play a round-robin tournament (seed 001's, by default) among the agents of FILE into DIR (resumable); `parley report DIR` analyses it",
		Long: `FILE lists the agents (vLLM endpoints with optional adapters, a parley
run's trained policy, external OpenAI-compatible models), the ledger judge,
the rounds per framing and the analysis settings; see
configs/tournaments/seed001-agents.yaml. Every unordered pair of agents meets in
each round and framing (seed 001's schedule; "schedule: both" plays both
role assignments each round). Games run concurrently within each agent's
max_concurrent; a failed game is retried, then recorded as failed. DIR
keeps one file per finished game: run the same command again after a kill
to play only the games left. The tournament's spec and prompt files are
frozen in DIR at the first start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			spec, err := config.LoadTournament(agents)
			if err != nil {
				return err
			}
			prog, end := a.tournamentProgress()
			sum, err := app.Tournament(cmd.Context(), spec, app.TournamentOptions{Dir: dir, RetryFailed: retryFailed, Progress: prog, Logger: log})
			end()
			if err != nil {
				return err
			}
			// A table for people, one structured log line for machines.
			a.summarize(summary.New("tournament").Add("games", sum.Total).Add("played", sum.Played).
				Add("resumed", sum.Resumed).Add("failed", sum.Failed).Add("retries", sum.Retries).
				Add("elapsed", sum.Elapsed).Add("complete", sum.Complete).Add("dir", dir))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agents, "agents", "", "tournament file: agents, judge, rounds (YAML)")
	f.StringVar(&dir, "dir", "", "tournament directory (created, or resumed)")
	f.BoolVar(&retryFailed, "retry-failed", false, "play again the games recorded as failed")
	_ = cmd.MarkFlagRequired("agents")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// tournamentProgress is a progress bar (with an ETA) over the games left,
// made at the first report; end stops it.
func (a *cli) tournamentProgress() (func(done, failed, total int), func()) {
	var (
		mu    sync.Mutex
		bars  *progress.Bars
		bar   *progress.Bar
		start int
	)
	return func(done, _, total int) {
			mu.Lock()
			defer mu.Unlock()
			if bars == nil {
				bars, start = a.bars(), done
				bar = bars.Add("games", int64(total-done))
				return
			}
			bar.SetCurrent(int64(done - start))
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			if bars != nil {
				bars.Wait()
			}
		}
}
