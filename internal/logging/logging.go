// Package logging builds parley's zap logger: console or JSON output, a
// level, no sampling, and a writer that progress bars can redirect so that
// log lines print above the bars instead of through them.
package logging

import (
	"fmt"
	"io"
	"os"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// Writer is an io.Writer whose destination can be swapped while logging
// goes on (to a progress container while bars run, back to stderr after).
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p to the current destination.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Swap sets a new destination and returns the old one.
func (s *Writer) Swap(w io.Writer) io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.w
	s.w = w
	return old
}

// Sync is a no-op: destinations are unbuffered.
func (s *Writer) Sync() error { return nil }

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Resolve returns the format auto stands for: console on a terminal, JSON
// otherwise; other formats are returned as given.
func Resolve(format string, tty bool) string {
	if format != "auto" {
		return format
	}
	if tty {
		return "console"
	}
	return "json"
}

// New returns a logger writing to w in format (auto, console or json; auto
// is console on a terminal and JSON otherwise) at level (debug, info, warn,
// error). Sampling is off: every line is written.
func New(format, level string, w *Writer, tty bool) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("logging: level %q: want debug, info, warn or error", level)
	}
	format = Resolve(format, tty)
	var enc zapcore.Encoder
	switch format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		if tty {
			ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("logging: format %q: want auto, console or json", format)
	}
	core := zapcore.NewCore(enc, zapcore.AddSync(w), lvl)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(w))), nil
}
