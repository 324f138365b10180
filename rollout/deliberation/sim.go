package deliberation

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/parleyhq/parley/rollout"
	voice "github.com/parleyhq/parley/sim/scripted"
)

// The game in serve-sim (rollout.Spec.Sim, package sim's Speaker): its
// agents speak in the simulated model's voice (package sim/scripted) and add
// the game's protocol. An agent never agrees on its first own turn; it
// agrees, ending its turn with DefaultMarker, when the other side's last
// turn carries DefaultMarker; otherwise it agrees with the model's
// AgreeProb (serve-sim --agree-prob; an adapter's is higher). When the
// last user message asks for the final solution, the agent writes the
// solution paragraph instead, with more Collective-Agency sentences once
// the dialogue holds two agreement markers. The judge's scores of the
// game (the Collective-Agency rubric, pairwise preferences) are serve-sim's
// built-in judge: reward's judges, which any game may be scored by.
//
// The game's prompts are recognised by their system messages: an agent's
// (System) or the final completion's (finalSystem).

// closeAgree are the closings of a turn that accepts the standing
// proposal.
var closeAgree = []string{
	"I accept the standing proposal; it serves both of us and keeps {k} shared. " + DefaultMarker,
	"Agreed: we move forward together on {k}. " + DefaultMarker,
	"This plan works for me and for everyone involved. " + DefaultMarker,
}

// Sim answers the game's prompts in serve-sim (see NewSim).
type Sim struct{}

var _ rollout.SimAnswerer = (*Sim)(nil)

// NewSim returns the game's serve-sim answers. The game has no serve-sim
// options: any is an error.
func NewSim(options map[string]string) (*Sim, error) {
	if len(options) > 0 {
		return nil, fmt.Errorf("deliberation.NewSim: unknown options %q (the game has none)", slices.Sorted(maps.Keys(options)))
	}
	return &Sim{}, nil
}

// Reply implements sim.Answerer: it declines every prompt, the game's
// agents answer through Speak, which is given the model that speaks.
func (*Sim) Reply(string, []string, []string, *rand.Rand) (string, bool) { return "", false }

// Judge implements sim.Answerer: it declines every question, the game's
// judge being serve-sim's built-in one.
func (*Sim) Judge(string, string, bool) (string, bool) { return "", false }

// Speak implements sim.Speaker: an agent's turn or the final solution
// (see the comment at the top of this file) for a prompt of the game, as
// model m.
func (*Sim) Speak(m voice.Model, roles, contents []string, rng *rand.Rand) (string, []int32, bool) {
	if !isGamePrompt(roles, contents) {
		return "", nil, false
	}
	d := voice.Read(roles, contents)
	if d.Final {
		agreements := 0
		for _, c := range contents {
			agreements += strings.Count(c, DefaultMarker)
		}
		extraCA := 0.0
		if agreements >= 2 {
			extraCA = 0.25
		}
		text, toks := m.Final(d, extraCA, rng)
		return text, toks, true
	}
	agree := false
	switch {
	case d.OwnTurns == 0:
	case strings.Contains(d.LastOther, DefaultMarker):
		agree = true
	default:
		agree = rng.Float64() < m.AgreeProb
	}
	var accept []string
	if agree {
		accept = closeAgree
	}
	text, toks := m.Turn(d, accept, rng)
	return text, toks, true
}

// isGamePrompt reports whether a prompt is the game's: its first message
// is an agent's system prompt (System) or the final completion's.
func isGamePrompt(roles, contents []string) bool {
	if len(roles) == 0 || roles[0] != "system" {
		return false
	}
	sys := contents[0]
	return strings.HasPrefix(sys, finalSystem) ||
		strings.HasPrefix(sys, "You are Agent ") && strings.Contains(sys, systemNegotiating)
}
