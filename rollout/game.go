package rollout

import (
	"context"

	"github.com/parleyhq/parley/dataset"
)

// Game is an environment: it plays one rollout of a prompt row through
// Agents and fills the record's game fields (turns, agreement, rounds,
// final, outcome, and each role's Outcome). Each agent sees only the
// messages the game gives it, so hidden state and private traces (seed 001)
// and many parties with private scores (seed 002) fit the same interface.
// Play is called concurrently for many rollouts: a Game holds no state
// that changes during play. State that carries from one game to the next
// belongs to a series (SeriesGame).
type Game interface {
	// Name is the game's env name, recorded with every rollout.
	Name() string
	// Validate reports whether a prompt row can be played.
	Validate(p dataset.Prompt) error
	// Roles lists the roles of a rollout of p, in a fixed order: the
	// agents that speak (and the final completion, if the game has one).
	Roles(p dataset.Prompt) []string
	// Play plays one rollout.
	Play(ctx context.Context, p dataset.Prompt, agents Agents, rec *dataset.Rollout) error
}

// SeriesGame is a game whose state flows from one game of a series to the
// next (seed 002's trust vectors): PlayState plays game number
// rec.GameIndex of a series from the state the previous game left (nil
// before the first) and returns the state after it, as JSON. The state is
// recorded in the run directory after every game, so a resumed series goes
// on from the next game (RunSeries).
type SeriesGame interface {
	Game
	PlayState(ctx context.Context, p dataset.Prompt, agents Agents, rec *dataset.Rollout, state []byte) ([]byte, error)
}
