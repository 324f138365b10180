package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/eval/tournament"
	"go.uber.org/zap"
)

// Report writes the report of a run or tournament directory and the
// evaluation files, and returns the report's path.
func Report(fl ReportOptions, log *zap.Logger) (string, error) {
	if fl.RunDir != "" {
		st, err := os.Stat(fl.RunDir)
		if err != nil {
			return "", fmt.Errorf("report: run directory: %w", err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("report: %s is not a directory", fl.RunDir)
		}
	}
	if fl.RunDir == "" && len(fl.Evals) == 0 {
		return "", fmt.Errorf("report: nothing to report: give a run directory, --eval files, or both")
	}
	if fl.Window < 0 {
		return "", fmt.Errorf("report: flag --window: %d steps: want a positive window, or 0 for the default", fl.Window)
	}
	out := fl.Out
	if out == "" {
		out = "report"
		if fl.RunDir != "" {
			out = filepath.Join(fl.RunDir, "report")
		}
	}
	if fl.RunDir != "" && tournament.IsDir(fl.RunDir) {
		return TournamentReport(fl.RunDir, out)
	}
	if fl.RunDir != "" {
		if err := checkRunDir(dataset.RunDir(fl.RunDir)); err != nil {
			return "", err
		}
	}
	scale, err := runScale(fl.RunDir)
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	if err := report.Generate(report.Options{
		RunDir: fl.RunDir, OutDir: out, EvalFiles: fl.Evals, Window: fl.Window, Title: fl.Title, Logger: log, Scale: scale,
	}); err != nil {
		return "", err
	}
	return filepath.Join(out, report.ReportFile), nil
}

// checkRunDir refuses a directory that holds nothing a run writes first
// (its config.yaml, metrics.jsonl or rollouts/): an empty or mistyped
// directory, whose report would be empty.
func checkRunDir(d dataset.RunDir) error {
	for _, p := range []string{d.ConfigPath(), d.MetricsPath(), d.RolloutsDir()} {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return fmt.Errorf("report: %s holds no %s, %s or %s/: not a run directory (give runs/<name>, a tournament directory, or --eval files alone)",
		d.Root(), dataset.ConfigFile, dataset.MetricsFile, dataset.RolloutsDirName)
}

// ReportOptions are `parley report`'s inputs.
type ReportOptions struct {
	// RunDir is a run or tournament directory ("": --eval files only).
	RunDir string
	// Out is the report's folder (default RUN_DIR/report, else ./report).
	Out string
	// Title, Evals and Window: the report's title, the evaluation files
	// and the running-average window (0: the default).
	Title  string
	Evals  []string
	Window int
}
