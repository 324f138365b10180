package sim

import "math/rand/v2"

// Answerer answers one game's prompts in place of the simulator's persona
// agents and judge: the scripted agents and judge of a game that has its
// own (seed 001's holders, requesters and ledger judge; seed 002's
// parties). A game implements it in its own package without importing
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
