package main

import (
	"os"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/internal/logging"
	"github.com/parleyhq/parley/internal/progress"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// cli holds what every command shares: the log settings and, once made,
// the logger and its swappable writer.
type cli struct {
	logFormat, logLevel string
	logs                *logging.Writer
	log                 *zap.Logger
	// console is set when logs are for people (console format): summaries
	// print as tables on stdout instead of as one JSON log line.
	console bool
}

// logger builds the logger from the flags, falling back to cfg's log section.
func (a *cli) logger(cfg *config.Config) (*zap.Logger, error) {
	if a.log != nil {
		return a.log, nil
	}
	format, level := "auto", "info"
	if cfg != nil {
		format, level = cfg.Log.Format, cfg.Log.Level
	}
	if a.logFormat != "" {
		format = a.logFormat
	}
	if a.logLevel != "" {
		level = a.logLevel
	}
	a.logs = logging.NewWriter(os.Stderr)
	stderrTTY := logging.IsTerminal(os.Stderr)
	format = logFormat(format, logging.IsTerminal(os.Stdout), stderrTTY)
	l, err := logging.New(format, level, a.logs, stderrTTY)
	if err != nil {
		return nil, err
	}
	a.log = l
	a.console = format == "console"
	return l, nil
}

// logFormat is the format that format (auto, console or json) stands for:
// auto is console only when both stdout and stderr are terminals, so that
// `parley … | tee`, `> file` or `2> file` gets JSON logs and a summary line.
func logFormat(format string, stdoutTTY, stderrTTY bool) string {
	return logging.Resolve(format, stdoutTTY && stderrTTY)
}

// bars starts progress bars when stderr is a terminal.
func (a *cli) bars() *progress.Bars {
	return progress.New(logging.IsTerminal(os.Stderr), a.logs)
}

// summarize ends a command with its summary: a table on stdout when logs
// are for people, else one structured log line. Bars must be done.
func (a *cli) summarize(t *summary.Table) {
	if a.console {
		if err := t.WriteText(os.Stdout); err == nil {
			return
		}
	}
	if a.log != nil {
		a.log.Info(t.Title()+" summary", t.Fields()...)
	}
}

// setup loads --config (with environment and --<key> overrides), builds the
// logger from it, and says which of the server keys the command uses (u)
// are at their defaults.
func (a *cli) setup(cmd *cobra.Command, path string, u uses) (config.Config, *zap.Logger, error) {
	cfg, err := a.loadConfig(cmd, path)
	if err != nil {
		return cfg, nil, err
	}
	log, err := a.logger(&cfg)
	if err != nil {
		return cfg, nil, err
	}
	warnDefaults(cfg, path, u, log)
	return cfg, log, nil
}

// loadConfig loads --config with environment and --<key> overrides.
func (a *cli) loadConfig(cmd *cobra.Command, path string) (config.Config, error) {
	return config.Load(path, cmd.Flags())
}

// configFlags adds --config and the hidden per-key overrides to cmd.
func configFlags(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "config", "", "YAML config file (PARLEY_* variables and --<key>=value flags override it)")
	config.RegisterFlags(cmd.Flags())
}

// env is what app's commands run with: the logger, cmd's stdout, progress
// bars on a terminal and the closing summary.
func (a *cli) env(cmd *cobra.Command, log *zap.Logger) app.Env {
	return app.Env{Log: log, Out: cmd.OutOrStdout(), Bars: a.bars, Summarize: a.summarize}
}
