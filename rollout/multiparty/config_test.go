package multiparty_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// TestConfigSection: game.multiparty is found through the registry, with
// its defaults, and its errors name their keys.
func TestConfigSection(t *testing.T) {
	cfg, err := config.Parse([]byte("game:\n  env: multiparty\n  multiparty:\n    max_rounds: 6\n    conditions: [none, rubric/s_p]\njudge:\n  kind: game\n"))
	if err != nil {
		t.Fatal(err)
	}
	sec := cfg.Game.Active().(*multiparty.Config)
	if sec.MaxRounds != 6 || sec.VotesNeeded != 4 || sec.Trust.Lambda != 0.7 {
		t.Errorf("section %+v", sec)
	}
	plan, err := sec.Plan()
	if err != nil || len(plan) != 2 || plan[1].Method != trust.MethodRubric || plan[1].Condition != trust.CondSP || plan[0].Label() != "No trust" {
		t.Errorf("Plan = %+v, %v", plan, err)
	}
	tests := []struct{ yaml, want string }{
		{"votes_needed: 6", "key game.multiparty.votes_needed"},
		{"trust: {method: vibes}", "key game.multiparty.trust.method"},
		{"trust: {lambda: 1.5}", "key game.multiparty.trust.lambda"},
		{"conditions: [brs/s, brs/s]", "key game.multiparty.conditions"},
		{"conditions: [brs/maybe]", "key game.multiparty.conditions"},
		{"scripted: [chair]", "key game.multiparty.scripted"},
		{"invalid_penalty: -1", "key game.multiparty.invalid_penalty"},
		{"reward: team", "key game.multiparty.reward: must be own or honest_mean"},
		{"rounds: 3", `unknown key "game.multiparty.rounds"`},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte("game:\n  env: multiparty\n  multiparty:\n    " + tt.yaml + "\njudge:\n  kind: game\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse = %v, want an error naming %s", tt.yaml, err, tt.want)
		}
	}
	// A bad trust setting is reported once, under key trust, not again
	// for each condition (whose settings are the trust's but for what the
	// entry sets).
	for _, tt := range []struct{ yaml, want string }{
		{"conditions: [none, brs/s_p]\n    trust: {lambda: 1.5}", "key game.multiparty.trust.lambda: must be in [0, 1), got 1.5"},
		{"conditions: [s_p, none]\n    trust: {method: vibes}", "key game.multiparty.trust.method"},
	} {
		_, err := config.Parse([]byte("game:\n  env: multiparty\n  multiparty:\n    " + tt.yaml + "\njudge:\n  kind: game\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "conditions") {
			t.Errorf("%s: Parse = %v, want only an error naming %s", tt.yaml, err, tt.want)
		}
	}
	if _, err := config.Parse([]byte("game:\n  env: multiparty\ncurriculum:\n  mix: {2hb2g: 1, 1hb3g: 1}\njudge:\n  kind: game\n")); err != nil {
		t.Errorf("curriculum.mix over the scenario types = %v", err)
	}
}
