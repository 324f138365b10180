// Package command is the hook through which a package adds to the parley
// command line without cmd/parley importing it (Caddy's RegisterCommand
// is the model): a game registers its own commands (seed 002's `parley
// scenario`) and its serve-sim flags (seed 001's --ledger-mode) from an
// init function, and cmd/parley adds whatever is registered. Importing
// the games (rollout/games) is then all the wiring a game's command
// needs.
//
// Registrations are a program's wiring, checked at start: Register and
// RegisterSimFlag panic on a duplicate or incomplete one.
package command

import (
	"fmt"
	"sort"
	"sync"

	"github.com/spf13/cobra"
)

// Command is a top-level command a package adds to parley.
type Command struct {
	// Name is the command's name on the command line ("scenario"): the
	// first word of the cobra command's Use.
	Name string
	// New builds the command, with its flags and subcommands; it is
	// called once per command tree.
	New func() *cobra.Command
}

// SimFlag is a flag a game adds to `parley serve-sim`: a string flag that
// is a shorthand for --game-option Game.Option=VALUE (seed 001's
// --ledger-mode for endowment.ledger_mode).
type SimFlag struct {
	// Name is the flag's name, without dashes ("ledger-mode").
	Name string
	// Game and Option are the game's serve-sim option the flag sets
	// (rollout.Spec.Sim's options).
	Game, Option string
	// Default is the flag's default value, shown in the help; it applies
	// only where the game's option does (the flag sets the option only
	// when given).
	Default string
	// Usage is the flag's help text.
	Usage string
}

// GameOption is the --game-option value the flag stands for when given
// value: Game.Option=value.
func (f SimFlag) GameOption(value string) string { return f.Game + "." + f.Option + "=" + value }

var (
	mu       sync.RWMutex
	commands = map[string]Command{}
	simFlags = map[string]SimFlag{}
)

// Register adds a top-level command to parley. It panics on an empty
// name, a nil New or a name registered twice.
func Register(c Command) {
	mu.Lock()
	defer mu.Unlock()
	if c.Name == "" || c.New == nil {
		panic("command.Register: a command needs a name and New")
	}
	if _, dup := commands[c.Name]; dup {
		panic(fmt.Sprintf("command.Register: command %q registered twice", c.Name))
	}
	commands[c.Name] = c
}

// Commands returns the registered commands, sorted by name.
func Commands() []Command {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RegisterSimFlag adds a flag to `parley serve-sim`. It panics on an
// empty name, game or option, or a name registered twice.
func RegisterSimFlag(f SimFlag) {
	mu.Lock()
	defer mu.Unlock()
	if f.Name == "" || f.Game == "" || f.Option == "" {
		panic("command.RegisterSimFlag: a serve-sim flag needs a name, a game and an option")
	}
	if _, dup := simFlags[f.Name]; dup {
		panic(fmt.Sprintf("command.RegisterSimFlag: flag --%s registered twice", f.Name))
	}
	simFlags[f.Name] = f
}

// SimFlags returns the registered serve-sim flags, sorted by name.
func SimFlags() []SimFlag {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]SimFlag, 0, len(simFlags))
	for _, f := range simFlags {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
