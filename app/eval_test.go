package app

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/toygame"
)

// TestEvalPromptsGameBuiltin: an eval set that is its game's own bundled
// curriculum (the toy game's builtin:toy-eval) loads through the game's
// Spec, whichever game the config plays, and keeps its eval split. It used
// to fail with `unknown builtin curriculum "builtin:toy-eval"`: evalPrompts
// built its load options by hand, without the games' bundled curricula.
func TestEvalPromptsGameBuiltin(t *testing.T) {
	tests := []struct {
		name, env, path, data string
		n                     int
		want                  []string
	}{
		{"another game configured", "deliberation", "", "", 0, []string{"toy-eval-1", "toy-eval-2", "toy-eval-3"}},
		{"another game, two drawn", "single", "", "", 2, nil},
		{"the set's game configured on it", toygame.Name, toygame.EvalCurriculum, "", 0, []string{"toy-eval-1", "toy-eval-2", "toy-eval-3"}},
		{"--data names it", "deliberation", "", toygame.EvalCurriculum, 0, []string{"toy-eval-1", "toy-eval-2", "toy-eval-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Game.Env = tt.env
			if tt.path != "" {
				cfg.Curriculum.Path = tt.path
			}
			rows, err := evalPrompts(cfg, toygame.EvalSet.Name, tt.data, tt.n)
			if err != nil {
				t.Fatalf("evalPrompts(%s, %q, %d) with game %s: %v", toygame.EvalSet.Name, tt.data, tt.n, tt.env, err)
			}
			var ids []string
			for _, r := range rows {
				if r.Split != dataset.SplitEval {
					t.Errorf("row %s of split %q, want only the eval split", r.ID, r.Split)
				}
				ids = append(ids, r.ID)
			}
			if tt.want != nil && !slices.Equal(ids, tt.want) {
				t.Errorf("evalPrompts = %v, want %v", ids, tt.want)
			}
			if tt.n > 0 && len(rows) != tt.n {
				t.Errorf("evalPrompts drew %d rows, want %d", len(rows), tt.n)
			}
		})
	}
}
