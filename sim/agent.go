package sim

import (
	"math/rand/v2"

	"github.com/parleyhq/parley/sim/scripted"
)

// dialogueState is what the simulated model reads from its prompt: the
// scripted agent's view, and the messages as Options.Games are asked
// about them (Answerer.Reply).
type dialogueState struct {
	scripted.Dialogue
	roles, contents []string
}

func readDialogue(p chatPrompt) dialogueState {
	st := dialogueState{roles: make([]string, len(p.msgs)), contents: make([]string, len(p.msgs))}
	for i, m := range p.msgs {
		st.roles[i], st.contents[i] = m.Role, m.Content
	}
	st.Dialogue = scripted.Read(st.roles, st.contents)
	return st
}

// AdapterCABias is the Collective-Agency bias of a LoRA adapter's
// completions, and AdapterCABiasMax its most with Options.AdapterCAGain.
const (
	AdapterCABias    = 0.25
	AdapterCABiasMax = 0.6
)

// model returns the simulated model answering as name: the base model, or
// a loaded LoRA adapter (more eager to agree, more Collective-Agency
// sentences; with AdapterCAGain, more with each adapter loaded).
func (s *Server) model(name string, adapter bool) scripted.Model {
	m := scripted.Model{Name: name, Encode: s.tok.Encode, AgreeProb: s.opts.AgreeProb}
	if adapter {
		m.AgreeProb, m.CABias = s.opts.AdapterAgreeProb, AdapterCABias
		if g := s.opts.AdapterCAGain; g > 0 {
			s.loraMu.RLock()
			ord := s.loras[name].ord
			s.loraMu.RUnlock()
			m.CABias = min(AdapterCABias+g*float64(ord), AdapterCABiasMax)
		}
	}
	return m
}

// reply writes the simulated model's next message for a parsed prompt:
// the first of Options.Games that answers it (Speaker.Speak, else
// Answerer.Reply), else the scripted agent's (scripted.Model.Reply). It
// returns the text and its tokens without the closing <|im_end|>. Every
// random choice comes from rng, so equal inputs give equal replies.
func (s *Server) reply(st dialogueState, m scripted.Model, rng *rand.Rand) (string, []int32) {
	for _, g := range s.opts.Games {
		if sp, ok := g.(Speaker); ok {
			if text, toks, ok := sp.Speak(m, st.roles, st.contents, rng); ok {
				return text, toks
			}
			continue
		}
		if text, ok := g.Reply(m.Name, st.roles, st.contents, rng); ok {
			return text, s.tok.Encode(text)
		}
	}
	return m.Reply(st.Dialogue, rng)
}

// thinkBlock returns the tokens of a reasoning block as Qwen3 writes one
// when thinking is enabled (scripted.Think).
func (t *Tokenizer) thinkBlock(st dialogueState, rng *rand.Rand) []int32 {
	return t.Encode(scripted.Think(st.Dialogue, rng))
}
