package sim

import (
	"math/rand/v2"

	"github.com/parleyhq/parley/sim/scripted"
)

// Answerer answers one game's prompts in place of the simulator's persona
// agents and judge: the scripted agents and judge of a game that has its
// own (seed 001's holders, requesters and ledger judge; seed 002's
// parties; seed 000's deliberation agents, a Speaker). A game implements it in its own package without importing
// sim: the methods take standard types only, and rollout.SimAnswerer (the
// game registry's hook, rollout.Spec.Sim) declares the same methods.
// Options.Games lists the answerers a server consults, in order; the
// first that answers wins, and a prompt none answers gets the persona
// agent or the built-in judge.
type Answerer interface {
	// Reply is the game's agent's reply to a prompt, as the model or LoRA
	// adapter named model: roles and contents are the prompt's chat
	// messages in order (a prompt that is not ChatML is one "system"
	// message holding its text). ok is false when the prompt is not the
	// game's; a declining Reply draws nothing from rng. Every random choice
	// comes from rng, so equal inputs give equal replies.
	Reply(model string, roles, contents []string, rng *rand.Rand) (text string, ok bool)
	// Judge is the game's judge's answer to question (the last user
	// message of a chat completion for a judge model), asked with the
	// response_format schema named schema ("" when the request names
	// none); ok is false when the question is not the game's. outOfRange
	// asks for an answer with a value outside the schema
	// (Options.JudgeOutOfRangeRate); refusals and malformed (truncated)
	// answers are the server's to inject.
	Judge(schema, question string, outOfRange bool) (content string, ok bool)
}

// Speaker is an Answerer whose game's agents speak in the simulated
// model's own voice (package scripted) and add the game's protocol to it:
// seed 000's deliberation agents, which accept the standing proposal with
// the model's AgreeProb and mark it, and whose final solution counts the
// agreements. sim asks a Speaker's Speak instead of its Reply: m is the
// model or adapter answering, with the served tokenizer, so the game sizes
// its replies in that model's tokens. ok is false when the prompt is not
// the game's, and then nothing is drawn from rng. The game implements it
// importing package scripted (a leaf), not sim.
type Speaker interface {
	Answerer
	// Speak is the game's agent's reply to a prompt (roles and contents
	// as for Reply) as model m, with its tokens (m.Encode's, without
	// <|im_end|>).
	Speak(m scripted.Model, roles, contents []string, rng *rand.Rand) (text string, tokens []int32, ok bool)
}
