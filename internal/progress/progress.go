// Package progress draws progress bars for long work on a terminal and
// stays silent otherwise. While bars run, log lines are routed through the
// bar container so they print above the bars.
package progress

import (
	"io"
	"os"
	"time"

	"github.com/parleyhq/parley/internal/logging"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Bars is a set of progress bars, or nothing when output is not a terminal.
type Bars struct {
	p    *mpb.Progress
	logs *logging.Writer
	old  io.Writer
}

// New starts a bar container on stderr when enabled (a terminal); the log
// writer, if not nil, is redirected above the bars until Wait.
func New(enabled bool, logs *logging.Writer) *Bars {
	if !enabled {
		return &Bars{}
	}
	p := mpb.New(mpb.WithOutput(os.Stderr), mpb.WithRefreshRate(150*time.Millisecond), mpb.WithAutoRefresh())
	b := &Bars{p: p, logs: logs}
	if logs != nil {
		b.old = logs.Swap(p)
	}
	return b
}

// Bar is one progress bar; the zero Bar (no terminal) ignores every call.
type Bar struct{ b *mpb.Bar }

// Add adds a bar named name counting to total.
func (b *Bars) Add(name string, total int64) *Bar {
	if b.p == nil {
		return &Bar{}
	}
	bar := b.p.AddBar(total,
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d/%d")),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" "),
			decor.AverageSpeed(0, "%.1f/s", decor.WCSyncSpace), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
		mpb.BarRemoveOnComplete(),
	)
	return &Bar{b: bar}
}

// Start adds a bar and returns its tick and its end call (a failed end
// leaves the bar drawn where it stopped; a finished bar is removed).
func (b *Bars) Start(name string, total int) (tick func(), end func(failed bool)) {
	bar := b.Add(name, int64(total))
	return bar.Increment, func(failed bool) {
		if failed {
			bar.Abort()
		}
	}
}

// Increment advances the bar by one.
func (b *Bar) Increment() {
	if b.b != nil {
		b.b.Increment()
	}
}

// SetCurrent sets the bar's count (work already done when resuming).
func (b *Bar) SetCurrent(n int64) {
	if b.b != nil {
		b.b.SetCurrent(n)
	}
}

// Abort stops the bar, leaving it drawn.
func (b *Bar) Abort() {
	if b.b != nil {
		b.b.Abort(false)
	}
}

// Wait finishes drawing and gives logging back its destination.
func (b *Bars) Wait() {
	if b.p == nil {
		return
	}
	b.p.Shutdown()
	if b.logs != nil {
		b.logs.Swap(b.old)
	}
}
