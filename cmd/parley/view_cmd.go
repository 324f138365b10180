package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/spf13/cobra"
)

// newViewCmd is `parley view`: the local web viewer, or its export.
func newViewCmd(a *cli) *cobra.Command {
	var o app.ViewOptions
	var prompt, category, persona, member, agreed, rewardMin, rewardMax, advMin, advMax string
	cmd := &cobra.Command{
		Use:   "view RUN|DIR... [--addr HOST:PORT] [--export FILE.html [--steps A-B] [filters]]",
		Short: "Serve a local web viewer of runs, rollouts, tournaments, series and leagues (or export one HTML file)",
		Long: `Serves a web page, on 127.0.0.1 only unless --addr says otherwise, that
reads what parley wrote: a training run (config.yaml, metrics.jsonl,
batches/, rollouts/: interactive curves, each step's groups, each dialogue
with its trained tokens highlighted), a parley rollout output
(rollouts.parquet, summary.json), a tournament, a series or a league. It
prints its URL and keeps reading a run that is still being written. The
assets are built in: it works offline.

--export FILE.html writes one self-contained HTML file instead (the pages,
and the data of the chosen steps and filters), which opens in any browser
without parley.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			o.Dirs = args
			o.Filter = map[string][]string{}
			for k, v := range map[string]string{"prompt": prompt, "category": category, "persona": persona, "member": member, "agreed": agreed,
				"reward_min": rewardMin, "reward_max": rewardMax, "adv_min": advMin, "adv_max": advMax} {
				if v != "" {
					o.Filter[k] = []string{v}
				}
			}
			return app.View(cmd.Context(), a.env(cmd, log), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", app.DefaultViewAddr, "address to serve on (a non-loopback address exposes the data, and is warned about)")
	f.StringVar(&o.Export, "export", "", "write one self-contained HTML file here instead of serving")
	f.StringVar(&o.Steps, "steps", "", "the export's steps: A-B, A-, -B or N (default: all)")
	f.StringVar(&prompt, "prompt", "", "export only groups whose task or prompt id contains this")
	f.StringVar(&category, "category", "", "export only groups of this category")
	f.StringVar(&persona, "persona", "", "export only groups whose persona pair (id, name or text) contains this")
	f.StringVar(&member, "member", "", "export only groups a league member played in (e.g. snapshot-000004)")
	f.StringVar(&rewardMin, "reward-min", "", "export only groups with a role's reward at least this")
	f.StringVar(&rewardMax, "reward-max", "", "export only groups with a role's reward at most this")
	f.StringVar(&advMin, "adv-min", "", "export only groups with a role's advantage at least this")
	f.StringVar(&advMax, "adv-max", "", "export only groups with a role's advantage at most this")
	f.StringVar(&agreed, "agreed", "", "export only groups with a rollout that agreed (yes) or did not (no)")
	return cmd
}
