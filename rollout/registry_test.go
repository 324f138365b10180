package rollout_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
	_ "github.com/parleyhq/parley/rollout/games"
)

// TestBuiltins: every registered game's bundled curricula load by name
// through any game's LoadOptions, with that game's row requirements.
func TestBuiltins(t *testing.T) {
	all := rollout.Builtins()
	for _, name := range []string{"endowment", "2hb2g", "1hb3g", "multiparty"} {
		if len(all[name]) == 0 {
			t.Errorf("Builtins() has no curriculum %q (has %d)", name, len(all))
		}
	}
	for _, tt := range []struct{ game, path string }{
		{"endowment", "builtin:endowment"},
		{"multiparty", "builtin:multiparty"},
		{"multiparty", "builtin:1hb3g"},
		{"deliberation", "builtin:dilemmas"},
	} {
		spec, _ := rollout.Lookup(tt.game)
		if ps, err := dataset.LoadPrompts(tt.path, spec.LoadOptions()); err != nil || len(ps) == 0 {
			t.Errorf("%s: LoadPrompts(%s) = %d rows, %v", tt.game, tt.path, len(ps), err)
		}
		if spec.Curriculum.Default == "" {
			t.Errorf("%s has no default curriculum", tt.game)
		}
	}
	// The endowment's category is its own, not the deliberation game's.
	spec, _ := rollout.Lookup("deliberation")
	if _, err := dataset.LoadPrompts("builtin:endowment", spec.LoadOptions()); err == nil || !strings.Contains(err.Error(), `unknown category "endowment"`) {
		t.Errorf("deliberation rows from builtin:endowment = %v, want an unknown-category error", err)
	}
}

// TestRegisterBuiltinClash: a game may not bundle a curriculum under a
// name another game already uses (the deliberation game's dilemmas, the
// endowment game's own).
func TestRegisterBuiltinClash(t *testing.T) {
	for _, name := range []string{"dilemmas", "endowment"} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "builtin:"+name) {
					t.Errorf("Register with curriculum %q: panic %v, want one naming builtin:%s", name, r, name)
				}
			}()
			rollout.Register(rollout.Spec{Name: "clash-" + name, New: func(any, rollout.Shared) (rollout.Game, error) { return nil, nil },
				Curriculum: rollout.Curriculum{Builtins: map[string][]byte{name: nil}}})
		}()
		if _, ok := rollout.Lookup("clash-" + name); ok {
			t.Errorf("the clashing game clash-%s was registered", name)
		}
	}
}
