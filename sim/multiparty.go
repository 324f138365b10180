package sim

import (
	"math/rand/v2"

	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scripted"
)

// partyPrompt is the conversation of a party of seed 002's five-party
// negotiation (package rollout/multiparty): its system message and its
// user messages. serve-sim answers such a prompt as that game's scripted
// party — a hard bargainer, a general agent or the adversary, as the
// system message says (package scripted) — instead of a persona agent.
type partyPrompt struct {
	system string
	users  []string
}

// readParty returns the party conversation msgs hold, or nil when they
// are not one.
func readParty(msgs []Message) *partyPrompt {
	if len(msgs) == 0 || msgs[0].Role != "system" || !protocol.IsSystem(msgs[0].Content) {
		return nil
	}
	p := &partyPrompt{system: msgs[0].Content}
	for _, m := range msgs[1:] {
		if m.Role == "user" {
			p.users = append(p.users, m.Content)
		}
	}
	return p
}

// partyReply is the scripted party's reply and its tokens; ok is false
// when the conversation asks nothing the party can answer.
func (t *Tokenizer) partyReply(p *partyPrompt, rng *rand.Rand) (string, []int32, bool) {
	text, err := scripted.Reply(p.system, p.users, rng)
	if err != nil {
		return "", nil, false
	}
	return text, t.Encode(text), true
}
