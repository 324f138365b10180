package app

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/sim"
)

func TestSimGamesOptions(t *testing.T) {
	if n := len(mustSimGames(t)); n < 2 {
		t.Errorf("SimGames(nil) gave %d games' answers, want the endowment's and the multiparty's at least", n)
	}
	if _, err := SimGames([]string{"endowment.ledger_mode=any-number"}); err != nil {
		t.Errorf("a good option: %v", err)
	}
	for _, tt := range []struct{ opt, want string }{
		{"ledger_mode=strict", "want GAME.KEY=VALUE"},
		{"endowment.ledger_mode", "want GAME.KEY=VALUE"},
		{"chess.depth=3", `no game "chess"`},
		{"endowment.ledger_mode=loose", "ledger_mode"},
		{"endowment.budget=5", `unknown option "budget"`},
	} {
		if _, err := SimGames([]string{tt.opt}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SimGames(%q) = %v, want an error with %q", tt.opt, err, tt.want)
		}
	}
}

// mustSimGames is every registered game's serve-sim answers with their
// defaults, as serve-sim gives them to sim.New.
func mustSimGames(t testing.TB) []sim.Answerer {
	t.Helper()
	games, err := SimGames(nil)
	if err != nil {
		t.Fatal(err)
	}
	return games
}
