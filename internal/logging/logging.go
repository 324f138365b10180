// Package logging builds parley's zap logger: console or JSON output, a
// level, no sampling, and a writer that progress bars can redirect so that
// log lines print above the bars instead of through them.
package logging

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
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

// shortFloats is the console encoder with floats written as people read
// them: 4 significant digits (0.04746, 2.701e-08), integral values whole,
// instead of every digit of a float64 in fixed notation
// (0.000000027008354663848877). JSON logs keep full precision.
type shortFloats struct{ zapcore.Encoder }

// shortFloat is v with 4 significant digits as a JSON number, or false
// for NaN and ±Inf (left to the encoder, which quotes them).
func shortFloat(v float64) (json.Number, bool) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "", false
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return json.Number(strconv.FormatFloat(v, 'f', -1, 64)), true
	}
	return json.Number(strconv.FormatFloat(v, 'g', 4, 64)), true
}

// Clone keeps the rounding in loggers made With fields.
func (e shortFloats) Clone() zapcore.Encoder { return shortFloats{e.Encoder.Clone()} }

// AddFloat64 adds a With field's float, rounded.
func (e shortFloats) AddFloat64(k string, v float64) {
	if n, ok := shortFloat(v); ok {
		_ = e.Encoder.AddReflected(k, n)
		return
	}
	e.Encoder.AddFloat64(k, v)
}

// AddFloat32 adds a With field's float32, rounded.
func (e shortFloats) AddFloat32(k string, v float32) { e.AddFloat64(k, float64(v)) }

// EncodeEntry writes a line with its float fields rounded.
func (e shortFloats) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	out := fields
	for i, f := range fields {
		var v float64
		switch f.Type {
		case zapcore.Float64Type:
			v = math.Float64frombits(uint64(f.Integer))
		case zapcore.Float32Type:
			v = float64(math.Float32frombits(uint32(f.Integer)))
		default:
			continue
		}
		n, ok := shortFloat(v)
		if !ok {
			continue
		}
		if &out[0] == &fields[0] {
			out = slices.Clone(fields) // the caller's slice is not ours to change
		}
		out[i] = zap.Reflect(f.Key, n)
	}
	return e.Encoder.EncodeEntry(ent, out)
}

// New returns a logger writing to w in format (auto, console or json; auto
// is console on a terminal and JSON otherwise) at level (debug, info, warn,
// error). Sampling is off: every line is written. Console levels are
// coloured on a terminal unless NO_COLOR is set (to anything but "").
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
		if tty && os.Getenv("NO_COLOR") == "" { // https://no-color.org
			ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = shortFloats{zapcore.NewConsoleEncoder(ec)}
	default:
		return nil, fmt.Errorf("logging: format %q: want auto, console or json", format)
	}
	core := zapcore.NewCore(enc, zapcore.AddSync(w), lvl)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(w))), nil
}
