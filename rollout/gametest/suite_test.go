package gametest

import (
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	_ "github.com/parleyhq/parley/rollout/games" // the built-in games the variants below start from
)

// failing runs the suite's checks over spec up to the one named check and
// returns that one's error (a check before it failing is a test failure).
func failing(t *testing.T, spec rollout.Spec, check string) error {
	t.Helper()
	s := &suite{spec: spec, env: startSim(t, spec)}
	for _, c := range s.checks() {
		if c.absent {
			continue
		}
		err := c.run(t)
		if c.name == check {
			return err
		}
		if err != nil && c.needed {
			t.Fatalf("check %s failed before %s: %v", c.name, check, err)
		}
	}
	t.Fatalf("no check %s", check)
	return nil
}

// variant returns a copy of the registered game name changed by change.
func variant(t *testing.T, name string, change func(*rollout.Spec)) rollout.Spec {
	t.Helper()
	spec, ok := rollout.Lookup(name)
	if !ok {
		t.Fatalf("game %s is not registered", name)
	}
	change(&spec)
	return spec
}

// TestSuiteFails: each check of the suite fails on a game that breaks its
// part of the contract, naming what broke, and passes on the game as it
// is registered.
func TestSuiteFails(t *testing.T) {
	tests := []struct {
		name, game, check string
		change            func(*rollout.Spec)
		want              string // "": the check passes
	}{
		{"defaults that fail Validate", toygame.Name, "spec",
			func(s *rollout.Spec) { s.Config = func() any { return &toygame.Config{Turns: 0} } }, "key turns"},
		{"no kinds", toygame.Name, "spec", func(s *rollout.Spec) { s.Kinds = nil }, "spec.Kinds is empty"},
		{"a default curriculum of another game's rows", "single", "curriculum",
			func(s *rollout.Spec) { s.Curriculum.Default = "builtin:endowment" }, `unknown category "endowment"`},
		{"kinds it does not record", toygame.Name, "play", func(s *rollout.Spec) { s.Kinds = []string{"dialogue"} }, "a final sequence"},
		{"a scorer that fails", toygame.Name, "score", func(s *rollout.Spec) {
			s.Scorer = func(any) (reward.Judge, error) { return nil, errors.New("no scorer today") }
		}, "no scorer today"},
		{"seats that are not its players", "deliberation", "tournament", func(s *rollout.Spec) {
			tr := *s.Tournament
			tr.Seats = [2]string{"A", "judge"}
			s.Tournament = &tr
		}, "want two of the game's players"},
		{"rows outside its conditions", "endowment", "tournament", func(s *rollout.Spec) {
			tr := *s.Tournament
			tr.Conditions = tr.Conditions[:1]
			s.Tournament = &tr
		}, "want one of"},
		{"a series plan for a game that carries no state", "single", "series", func(s *rollout.Spec) {
			s.Series = func(_ any, rows []dataset.Prompt, _ int, _ int64) ([]rollout.Series, error) {
				return []rollout.Series{{ID: "s", Games: rows[:2]}}, nil
			}
		}, "is no rollout.SeriesGame"},
		{"a series plan of rows it refuses", "multiparty", "series", func(s *rollout.Spec) {
			s.Series = func(_ any, _ []dataset.Prompt, _ int, _ int64) ([]rollout.Series, error) {
				return []rollout.Series{{ID: "s", Games: []dataset.Prompt{{ID: "bare", Category: "2hb2g", Task: "negotiate"}}}}, nil
			}
		}, "playing series s"},
		{"an eval set that is not bundled", toygame.Name, "evalset", func(s *rollout.Spec) {
			es := *s.EvalSet
			es.Curriculum = "builtin:gametest-missing"
			s.EvalSet = &es
		}, `unknown builtin curriculum "builtin:gametest-missing"`},
		{"an eval set of another game's rows", toygame.Name, "evalset", func(s *rollout.Spec) {
			es := *s.EvalSet
			es.Curriculum = "builtin:endowment"
			s.EvalSet = &es
		}, `unknown category "endowment"`},
		{"serve-sim answers that take any option", toygame.Name, "sim", func(s *rollout.Spec) {
			s.Sim = func(map[string]string) (rollout.SimAnswerer, error) { return toygame.Sim{}, nil }
		}, "accepted the unknown option"},
		{"the toy game's own eval set, bundled", toygame.Name, "evalset", func(*rollout.Spec) {}, ""},
		{"the toy game's tournament", toygame.Name, "tournament", func(*rollout.Spec) {}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := failing(t, variant(t, tt.game, tt.change), tt.check)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check %s of %s: %v, want it to pass", tt.check, tt.game, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("check %s of %s with %s: %v, want an error containing %q", tt.check, tt.game, tt.name, err, tt.want)
			}
		})
	}
}
