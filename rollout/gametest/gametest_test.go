package gametest_test

import (
	"testing"

	_ "github.com/parleyhq/parley/internal/toygame" // the toy game, registered as a fourth game would be
	"github.com/parleyhq/parley/rollout"
	_ "github.com/parleyhq/parley/rollout/games" // every built-in game, as cmd/parley registers them
	"github.com/parleyhq/parley/rollout/gametest"
)

// TestGames runs the conformance suite over every registered game: the
// built-in ones (rollout/games) and the toy game, which is only its own
// package and one import.
func TestGames(t *testing.T) {
	for _, name := range []string{"deliberation", "endowment", "multiparty", "single", "toy"} {
		if _, ok := rollout.Lookup(name); !ok {
			t.Errorf("game %s is not registered", name)
		}
	}
	gametest.RunAll(t)
}
