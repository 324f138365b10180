package main

import (
	"fmt"

	"github.com/parleyhq/parley/app"

	"github.com/spf13/cobra"
)

// newReportCmd is `parley report`: the markdown report with PNG charts.
func newReportCmd(a *cli) *cobra.Command {
	var fl app.ReportOptions
	cmd := &cobra.Command{
		Use:   "report [RUN_DIR] [--eval FILE]... [--out DIR]",
		Short: "Write a markdown report with PNG charts: training dynamics from RUN_DIR/metrics.jsonl, then pairwise, benchmark and judge-agreement tables from --eval files",
		Long: `RUN_DIR is a run directory (runs/<name>), or a tournament directory
(parley tournament), whose report has seed 001's tables and figures. A
run's metrics.jsonl gives the training dynamics of seed 000 figure 2 (judge
score min/mean/max, labelled by the run's judge: CA 1–5 or a rule's 0–1; agreement
rate, rounds to agreement, as running averages). Without RUN_DIR only the
--eval files are reported. --eval takes the JSON files that parley eval
pairwise, eval judge-agreement and bench write (repeatable, or comma
separated; shell globs are expanded by the shell). The report goes to
OUT/report.md with its PNGs beside it (default OUT: RUN_DIR/report, else
./report).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := a.logger(nil)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				fl.RunDir = args[0]
			}
			path, err := app.Report(fl, log)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&fl.Evals, "eval", nil, "evaluation result files (JSON, JSON array or JSONL)")
	f.StringVar(&fl.Out, "out", "", "output directory (default: RUN_DIR/report, else ./report)")
	f.IntVar(&fl.Window, "window", 0, "running-average window in steps (default: a tenth of the run's steps, at least 1 and at most 50)")
	f.StringVar(&fl.Title, "title", "", "report title (default: Run report: <run name>)")
	return cmd
}
