// Package games registers parley's built-in games: importing it (for its
// side effects) makes every game of seeds 000, 001 and 002 known to
// rollout.Lookup, config validation and the command line.
package games

import (
	// The deliberation game of seed 000.
	_ "github.com/parleyhq/parley/rollout/deliberation"
	// The endowment game of seed 001.
	_ "github.com/parleyhq/parley/rollout/endowment"
	// The single-agent baseline of seed 000.
	_ "github.com/parleyhq/parley/rollout/single"
	// The repeated five-party negotiation of seed 002.
	_ "github.com/parleyhq/parley/rollout/multiparty"
)
