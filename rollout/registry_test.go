package rollout_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
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
			rollout.Register(rollout.Definition[rollout.NoSettings]{Name: "clash-" + name, New: func(*rollout.NoSettings, rollout.Shared) (rollout.Game, error) { return nil, nil },
				Curriculum: rollout.Curriculum{Builtins: map[string][]byte{name: nil}}})
		}()
		if _, ok := rollout.Lookup("clash-" + name); ok {
			t.Errorf("the clashing game clash-%s was registered", name)
		}
	}
}

// section is a game's section type for TestDefinitionSection; other is
// another game's.
type section struct{ N int }
type other struct{ N int }

// sized is a game that remembers the section it was built from.
type sized struct {
	rollout.Game
	n int
}

// TestDefinitionSection: a Definition's typed hooks get the section as
// its own type, the defaults when the section is nil (the zero value for
// a game without settings), and a section of another type is an error
// naming both types, never a panic.
func TestDefinitionSection(t *testing.T) {
	newSized := func(c *section, _ rollout.Shared) (rollout.Game, error) { return sized{n: c.N}, nil }
	withDefaults := rollout.Definition[section]{Name: "typed", Config: func() *section { return &section{N: 3} }, New: newSized,
		Scorer: func(c *section) (reward.Judge, error) { return nil, nil },
		Series: func(c *section, _ []dataset.Prompt, n int, _ int64) ([]rollout.Series, error) {
			return make([]rollout.Series, c.N*n), nil
		}}.Spec()
	bare := rollout.Definition[section]{Name: "bare", New: newSized}.Spec()
	tests := []struct {
		name    string
		spec    rollout.Spec
		section any
		want    int
		err     string
	}{
		{"defaults", withDefaults, nil, 3, ""},
		{"configured", withDefaults, &section{N: 5}, 5, ""},
		{"no settings", bare, nil, 0, ""},
		{"another game's section", withDefaults, &other{N: 5}, 0, "game typed: the game's section is *rollout_test.other, want *rollout_test.section"},
		{"a value, not a pointer", withDefaults, section{N: 5}, 0, "section is rollout_test.section, want *rollout_test.section"},
		{"a nil pointer", withDefaults, (*section)(nil), 0, "section is *rollout_test.section, want"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := tt.spec.New(tt.section, rollout.Shared{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("New(%#v) = %v, want an error containing %q", tt.section, err, tt.err)
				}
				if _, err := tt.spec.Scorer(tt.section); err == nil {
					t.Errorf("Scorer(%#v) took another type's section", tt.section)
				}
				if _, err := tt.spec.Series(tt.section, nil, 1, 0); err == nil {
					t.Errorf("Series(%#v) took another type's section", tt.section)
				}
				return
			}
			if err != nil || g.(sized).n != tt.want {
				t.Fatalf("New(%#v) = %+v, %v; want a game of section %d", tt.section, g, err, tt.want)
			}
		})
	}
	if bare.Config != nil || bare.Scorer != nil || bare.Series != nil {
		t.Error("a Definition without Config, Scorer or Series registers them")
	}
	if c, ok := withDefaults.Config().(*section); !ok || c.N != 3 {
		t.Errorf("Config() = %#v, want the defaults as *section", withDefaults.Config())
	}
	if s, err := withDefaults.Series(&section{N: 2}, nil, 3, 0); err != nil || len(s) != 6 {
		t.Errorf("Series = %d series, %v; want 6", len(s), err)
	}
}
