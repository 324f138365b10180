package main

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// observedApp is a cli whose logger records the entries at level and
// above, for tests of what a command logs.
func observedApp(level zapcore.Level) (*cli, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return &cli{log: zap.New(core)}, logs
}

// TestLogFormat: auto logs for people only when both stdout and stderr are
// terminals (JSON when stdout is piped or redirected, as issue 12 asks);
// an explicit format is kept.
func TestLogFormat(t *testing.T) {
	tests := []struct {
		format            string
		stdoutTTY, errTTY bool
		want              string
	}{
		{"auto", true, true, "console"},
		{"auto", false, true, "json"}, // parley … | tee, parley … > file
		{"auto", true, false, "json"}, // parley … 2> log
		{"auto", false, false, "json"},
		{"console", false, false, "console"},
		{"json", true, true, "json"},
	}
	for _, tt := range tests {
		if got := logFormat(tt.format, tt.stdoutTTY, tt.errTTY); got != tt.want {
			t.Errorf("logFormat(%q, stdout tty %v, stderr tty %v) = %q, want %q", tt.format, tt.stdoutTTY, tt.errTTY, got, tt.want)
		}
	}
}
