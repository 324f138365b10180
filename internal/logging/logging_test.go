package logging

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestConsoleFloats: console lines show floats with 4 significant digits
// (fields of the line and of With), never a float64's every digit in fixed
// notation; JSON lines keep full precision.
func TestConsoleFloats(t *testing.T) {
	tests := []struct {
		format    string
		want, not []string
	}{
		{"console", []string{`"kl": 2.701e-08`, `"reward_mean": 0.04746`, `"steps": 24`, `"nan": "NaN"`, `"lr": 0.0002`, `"f32": 0.3333`},
			[]string{"0.000000027", "0.047462101", "0.33333"}},
		{"json", []string{`"kl":0.000000027008354663848877`, `"reward_mean":0.04746210156008601`}, nil},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		log, err := New(tt.format, "info", NewWriter(&out), false)
		if err != nil {
			t.Fatal(err)
		}
		log.With(zap.Float64("lr", 2e-4)).Info("step done", zap.Float64("kl", 2.7008354663848877e-08),
			zap.Float64("reward_mean", 0.04746210156008601), zap.Float64("steps", 24), zap.Float64("nan", math.NaN()),
			zap.Float32("f32", 1.0/3))
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s line %q lacks %q", tt.format, out.String(), w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(out.String(), w) {
				t.Errorf("%s line %q has %q", tt.format, out.String(), w)
			}
		}
	}
}

// TestNoColor: console levels are coloured on a terminal, unless NO_COLOR
// is set to anything but "" (no-color.org).
func TestNoColor(t *testing.T) {
	tests := []struct {
		noColor string
		tty     bool
		color   bool
	}{
		{"", true, true},
		{"1", true, false},
		{"", false, false},
	}
	for _, tt := range tests {
		t.Setenv("NO_COLOR", tt.noColor)
		var out bytes.Buffer
		log, err := New("console", "info", NewWriter(&out), tt.tty)
		if err != nil {
			t.Fatal(err)
		}
		log.Warn("x")
		if got := strings.Contains(out.String(), "\x1b["); got != tt.color {
			t.Errorf("NO_COLOR=%q tty %v: colour %v in %q, want %v", tt.noColor, tt.tty, got, out.String(), tt.color)
		}
	}
}
