// Package progress draws progress bars for long work on a terminal and
// stays silent otherwise. While bars run, log lines are routed through the
// bar container so they print above the bars.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/logging"
	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Bars is a set of progress bars, or nothing when output is not a terminal.
type Bars struct {
	p    *mpb.Progress
	logs *logging.Writer
	old  io.Writer
	mu   sync.Mutex
	bars []*mpb.Bar
}

// New starts a bar container on stderr when enabled (a terminal); the log
// writer, if not nil, is redirected above the bars until Wait.
func New(enabled bool, logs *logging.Writer) *Bars {
	if !enabled {
		return &Bars{}
	}
	return newTo(os.Stderr, logs)
}

// newTo starts a bar container drawing to out.
func newTo(out io.Writer, logs *logging.Writer) *Bars {
	p := mpb.New(mpb.WithConsoleWriter(sizedWriter{cupwriter.New(out, true)}),
		mpb.WithRefreshRate(150*time.Millisecond), mpb.WithAutoRefresh())
	b := &Bars{p: p, logs: logs}
	if logs != nil {
		b.old = logs.Swap(p)
	}
	return b
}

// sizedWriter is mpb's terminal writer with a fallback size: a terminal
// that reports 0×0 (script(1) without a parent terminal, some CI runners)
// would otherwise draw nothing at all.
type sizedWriter struct{ mpb.ConsoleWriter }

// GetTermSize returns the terminal's size, or 100×24 when it reports none.
func (w sizedWriter) GetTermSize() (int, int, error) {
	width, height, err := w.ConsoleWriter.GetTermSize()
	if err != nil || width <= 0 || height <= 0 {
		return 100, 24, nil
	}
	return width, height, nil
}

// Bar is one progress bar; the zero Bar (no terminal) ignores every call.
type Bar struct {
	b    *mpb.Bar
	pace *pace
}

// Add adds a bar named name counting to total.
func (b *Bars) Add(name string, total int64) *Bar {
	if b.p == nil {
		return &Bar{}
	}
	p := &pace{start: time.Now()}
	bar := b.p.AddBar(total,
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d/%d")),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" "),
			decor.Any(func(s decor.Statistics) string { return p.String(s.Current, s.Total) }, decor.WCSyncSpace)),
		mpb.BarRemoveOnComplete(),
	)
	b.mu.Lock()
	b.bars = append(b.bars, bar)
	b.mu.Unlock()
	return &Bar{b: bar, pace: p}
}

// pace measures a bar's rate from its start, not counting work it was
// handed done (SetCurrent on resume).
type pace struct {
	start time.Time
	base  atomic.Int64
}

// String renders "rate/s ETA d" for current of total, or dashes before the
// first item.
func (p *pace) String(current, total int64) string {
	done := current - p.base.Load()
	el := time.Since(p.start)
	if done <= 0 || el <= 0 {
		return "–/s ETA –"
	}
	rate := float64(done) / el.Seconds()
	left := time.Duration(float64(total-current) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%.2f/s ETA %s", rate, left)
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
		b.pace.base.Store(n)
		b.b.SetCurrent(n)
	}
}

// Abort stops the bar, leaving it drawn.
func (b *Bar) Abort() {
	if b.b != nil {
		b.b.Abort(false)
	}
}

// Wait finishes drawing and gives logging back its destination; later
// calls do nothing. A finished bar is removed; one that did not finish is
// left drawn at the count it reached (never at a stale frame: the last
// frame is drawn before Wait returns).
func (b *Bars) Wait() {
	if b.p == nil {
		return
	}
	b.mu.Lock()
	for _, bar := range b.bars {
		bar.Abort(false) // nothing for a finished or aborted bar
	}
	b.mu.Unlock()
	b.p.Wait()
	b.p = nil
	if b.logs != nil {
		b.logs.Swap(b.old)
	}
}
