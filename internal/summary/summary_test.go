package summary

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{1234567, "1,234,567"},
		{int64(-1234), "-1,234"},
		{999, "999"},
		{0.123456, "0.1235"},
		{float64(3), "3"},
		{1500 * time.Millisecond, "1.5s"},
		{[]string{"a", "b"}, "a, b"},
		{nil, "–"},
		{"text", "text"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriteTextAligns(t *testing.T) {
	tab := New("rollout").Add("rollouts", 8).Add("agreement rate", 0.5).AddIf(false, "failed", 0).Add("elapsed", 2*time.Second)
	var b strings.Builder
	if err := tab.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "── rollout ──\n  rollouts        8\n  agreement rate  0.5\n  elapsed         2s\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestFieldsNameKeys(t *testing.T) {
	tab := New("score").Add("judge failed", 2).Add("elapsed", 1500*time.Millisecond)
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range tab.Fields() {
		f.AddTo(enc)
	}
	if enc.Fields["judge_failed"] != int64(2) {
		t.Errorf("judge_failed = %v", enc.Fields["judge_failed"])
	}
	if enc.Fields["elapsed_s"] != 1.5 {
		t.Errorf("elapsed_s = %v", enc.Fields["elapsed_s"])
	}
}
