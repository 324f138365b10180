package app

import (
	"io"

	"github.com/parleyhq/parley/internal/progress"
	"github.com/parleyhq/parley/internal/summary"
	"go.uber.org/zap"
)

// Env is what a command runs with beside its config: where it logs, where
// it prints its tables, and how it shows progress and its closing summary
// (a terminal's bars and table, or a log line; nothing in tests).
type Env struct {
	// Log is the command's logger (nil: none).
	Log *zap.Logger
	// Out receives what the command prints: tables, paths (nil: nowhere).
	Out io.Writer
	// Bars starts a set of progress bars (nil: none are shown).
	Bars func() *progress.Bars
	// Summarize shows the command's closing summary (nil: none).
	Summarize func(*summary.Table)
}

func (e Env) log() *zap.Logger {
	if e.Log == nil {
		return zap.NewNop()
	}
	return e.Log
}

func (e Env) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

func (e Env) bars() *progress.Bars {
	if e.Bars == nil {
		return progress.New(false, nil)
	}
	return e.Bars()
}

func (e Env) summarize(t *summary.Table) {
	if e.Summarize != nil {
		e.Summarize(t)
	}
}

// progress starts a progress bar of total items, returning its tick and
// its end call (harness's Progress options).
func (e Env) progress(label string, total int) (tick func(), end func(failed bool)) {
	bars := e.bars()
	bar := bars.Add(label, int64(total))
	return bar.Increment, func(failed bool) {
		if failed {
			bar.Abort()
		}
		bars.Wait()
	}
}
