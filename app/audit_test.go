package app

import (
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// TestNewAuditJudge: judge.audit builds a rubric judge on its own
// endpoint and model; without a share there is none.
func TestNewAuditJudge(t *testing.T) {
	for _, tt := range []struct {
		body  string
		model string // "": no audit judge
	}{
		{"judge:\n  kind: ca\n", ""},
		{"judge:\n  kind: ca\n  audit:\n    share: 0.25\n    base_url: http://127.0.0.1:9/v1\n    model: gpt-5.2\n    api_key_env: AUDIT_KEY\n", "gpt-5.2"},
	} {
		cfg, err := config.Load(writeYAML(t, tt.body), nil)
		if err != nil {
			t.Fatal(err)
		}
		j, closeJudge, err := newAuditJudge(cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tt.model == "" && j != nil:
			t.Errorf("%q: an audit judge %T, want none", tt.body, j)
		case tt.model != "" && (j == nil || j.Name() != tt.model):
			t.Errorf("%q: audit judge %v, want a CA judge asking %s", tt.body, j, tt.model)
		case tt.model != "":
			if s, ok := j.(reward.Scaler); !ok || s.Scale() != reward.CAScale {
				t.Errorf("%q: %T's scale is not CA 1–5", tt.body, j)
			}
		}
		closeJudge()
	}
}
