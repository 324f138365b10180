package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/spf13/cobra"
)

// newReportCmd is `parley report`: the markdown report with PNG charts.
func newReportCmd(a *app) *cobra.Command {
	var (
		evals      []string
		out, title string
		window     int
	)
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
			runDir := ""
			if len(args) == 1 {
				runDir = args[0]
				st, err := os.Stat(runDir)
				if err != nil {
					return fmt.Errorf("report: run directory: %w", err)
				}
				if !st.IsDir() {
					return fmt.Errorf("report: %s is not a directory", runDir)
				}
			}
			if runDir == "" && len(evals) == 0 {
				return fmt.Errorf("report: nothing to report: give a run directory, --eval files, or both")
			}
			if out == "" {
				out = "report"
				if runDir != "" {
					out = filepath.Join(runDir, "report")
				}
			}
			if runDir != "" && tournament.IsDir(runDir) {
				path, err := tournament.WriteReport(runDir, out)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
				return nil
			}
			scale, err := runScale(runDir)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			if err := report.Generate(report.Options{
				RunDir: runDir, OutDir: out, EvalFiles: evals, Window: window, Title: title, Logger: log, Scale: scale,
			}); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(out, report.ReportFile))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&evals, "eval", nil, "evaluation result files (JSON, JSON array or JSONL)")
	f.StringVar(&out, "out", "", "output directory (default: RUN_DIR/report, else ./report)")
	f.IntVar(&window, "window", 0, "running-average window in steps (default 50, capped at the run's steps)")
	f.StringVar(&title, "title", "", "report title (default: Run report: <run name>)")
	return cmd
}
