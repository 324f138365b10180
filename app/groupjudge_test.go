package app

import (
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// TestNewJudgeMode: judge.mode picks the CA judge's pointwise or group
// form; only the group form scores a group in one request.
func TestNewJudgeMode(t *testing.T) {
	for _, tt := range []struct {
		body  string
		group bool
	}{
		{"judge:\n  kind: ca\n", false},
		{"judge:\n  kind: ca\n  mode: pointwise\n", false},
		{"judge:\n  kind: ca\n  mode: group\n  position_check: 0.1\n", true},
	} {
		cfg, err := config.Load(writeYAML(t, tt.body), nil)
		if err != nil {
			t.Fatal(err)
		}
		j, closeJudge, err := newJudge(cfg, "", nil, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := j.(reward.GroupJudge); ok != tt.group {
			t.Errorf("%q: newJudge gave %T, a group judge: %v, want %v", tt.body, j, ok, tt.group)
		}
		if s, ok := j.(reward.Scaler); !ok || s.Scale() != reward.CAScale {
			t.Errorf("%q: %T's scale is not CA 1–5", tt.body, j)
		}
		closeJudge()
	}
}
