package multiparty

import (
	"fmt"
	"math/rand/v2"

	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scripted"
)

// Sim answers the game's prompts in serve-sim (rollout.Spec.Sim, package
// sim's Answerer): a prompt whose system message is a party's is answered
// by the game's scripted party — a hard bargainer, a general agent or the
// adversary, which votes NO on every proposal, as the system message says
// (package scripted) — instead of a persona agent. The game has no judge
// of its own in serve-sim.
type Sim struct{}

var _ rollout.SimAnswerer = Sim{}

// NewSim returns the game's serve-sim answers; the game takes no options.
func NewSim(options map[string]string) (Sim, error) {
	for k := range options {
		return Sim{}, fmt.Errorf("multiparty.NewSim: unknown option %q (the game has none)", k)
	}
	return Sim{}, nil
}

// Reply implements sim.Answerer: the scripted party's reply to a party's
// conversation (its system message, then its user messages); ok is false
// for other prompts and for a conversation that asks the party nothing.
func (Sim) Reply(_ string, roles, contents []string, rng *rand.Rand) (string, bool) {
	if len(roles) == 0 || roles[0] != "system" || !protocol.IsSystem(contents[0]) {
		return "", false
	}
	var users []string
	for i := 1; i < len(roles); i++ {
		if roles[i] == "user" {
			users = append(users, contents[i])
		}
	}
	text, err := scripted.Reply(contents[0], users, rng)
	if err != nil {
		return "", false
	}
	return text, true
}

// Judge implements sim.Answerer: the game has no judge question of its
// own.
func (Sim) Judge(string, string, bool) (string, bool) { return "", false }
