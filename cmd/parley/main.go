// Command parley is the orchestrator for self-play alignment training with
// RLAIF and GRPO: rollouts on vLLM, judging, GRPO batches, the trainer
// handshake, curricula, exports, evaluations and benchmark checks. This
// package only wires cobra commands to the packages that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/parleyhq/parley/internal/command"
	// The built-in games (seeds 000, 001, 002) register themselves, and
	// their commands and serve-sim flags (package command).
	_ "github.com/parleyhq/parley/rollout/games"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills parley at once.
	go func() { <-ctx.Done(); stop() }()
	root := newRoot()
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "parley: interrupted")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "parley:", userMessage(err))
		if level, _ := root.PersistentFlags().GetString("log-level"); level == "debug" {
			fmt.Fprintln(os.Stderr, "parley: error chain:", err)
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	a := &cli{}
	root := &cobra.Command{
		Use:           "parley",
		Short:         "Self-play alignment training with RLAIF and GRPO",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.logFormat, "log-format", "", "log format: auto, console or json (default: the config's log.format, else auto)")
	pf.StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn or error (default: the config's log.level, else info)")
	root.AddCommand(
		newConfigCmd(a),
		newServeSimCmd(a),
		newRolloutCmd(a),
		newScoreCmd(a),
		newExportCmd(a),
		newTrainCmd(a),
		newCurriculumCmd(a),
		newEvalCmd(a),
		newBenchCmd(a),
		newReportCmd(a),
		newTournamentCmd(a),
		newLeagueCmd(a),
		newSeriesCmd(a),
		newViewCmd(a),
	)
	// The commands packages registered (seed 002's scenario).
	for _, c := range command.Commands() {
		root.AddCommand(c.New())
	}
	return root
}

// version is the module version and the commit parley was built from (Go
// stamps the VCS state into the binary).
func version() string { return formatVersion(debug.ReadBuildInfo()) }

// formatVersion renders the module version, commit (with "(modified)" for
// a dirty tree), commit time and Go version of a build; ok false (no build
// information) gives "unknown".
func formatVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty, when string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		case "vcs.time":
			when = s.Value
		}
	}
	if rev == "" {
		return v + ", commit unknown (built without VCS information)"
	}
	return fmt.Sprintf("%s, commit %s%s, %s, %s", v, rev, dirty, when, bi.GoVersion)
}
