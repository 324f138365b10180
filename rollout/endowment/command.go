package endowment

import "github.com/parleyhq/parley/internal/command"

// The ledger judge's mode has its own serve-sim flag, --ledger-mode, older
// than --game-option; it joins serve-sim through package command, so
// cmd/parley does not import the game.
func init() {
	command.RegisterSimFlag(command.SimFlag{
		Name: "ledger-mode", Game: Name, Option: SimOptionLedgerMode, Default: SimLedgerStrict,
		Usage: "the endowment game's ledger judge: strict (stated commitments) or any-number (any number in a holder's reply is a gift); the same as --game-option endowment.ledger_mode=MODE",
	})
}
