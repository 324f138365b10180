package main

import (
	"fmt"
	"github.com/parleyhq/parley/app"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// newReportCmd is `parley report`: the markdown report with PNG charts.
func newReportCmd(a *cli) *cobra.Command {
	var fl reportFlags
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
				fl.runDir = args[0]
			}
			path, err := runReport(fl, log)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&fl.evals, "eval", nil, "evaluation result files (JSON, JSON array or JSONL)")
	f.StringVar(&fl.out, "out", "", "output directory (default: RUN_DIR/report, else ./report)")
	f.IntVar(&fl.window, "window", 0, "running-average window in steps (default: a tenth of the run's steps, at least 1 and at most 50)")
	f.StringVar(&fl.title, "title", "", "report title (default: Run report: <run name>)")
	return cmd
}

// reportFlags are parley report's inputs.
type reportFlags struct {
	runDir, out, title string
	evals              []string
	window             int
}

// runReport writes the report of a run or tournament directory and the
// evaluation files, and returns the report's path.
func runReport(fl reportFlags, log *zap.Logger) (string, error) {
	if fl.runDir != "" {
		st, err := os.Stat(fl.runDir)
		if err != nil {
			return "", fmt.Errorf("report: run directory: %w", err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("report: %s is not a directory", fl.runDir)
		}
	}
	if fl.runDir == "" && len(fl.evals) == 0 {
		return "", fmt.Errorf("report: nothing to report: give a run directory, --eval files, or both")
	}
	if fl.window < 0 {
		return "", fmt.Errorf("report: flag --window: %d steps: want a positive window, or 0 for the default", fl.window)
	}
	out := fl.out
	if out == "" {
		out = "report"
		if fl.runDir != "" {
			out = filepath.Join(fl.runDir, "report")
		}
	}
	if fl.runDir != "" && tournament.IsDir(fl.runDir) {
		return app.TournamentReport(fl.runDir, out)
	}
	scale, err := runScale(fl.runDir)
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if err := report.Generate(report.Options{
		RunDir: fl.runDir, OutDir: out, EvalFiles: fl.evals, Window: fl.window, Title: fl.title, Logger: log, Scale: scale,
	}); err != nil {
		return "", err
	}
	return filepath.Join(out, report.ReportFile), nil
}
