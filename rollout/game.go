package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
)

// Game is an environment: it plays one rollout of a prompt row through
// Agents and fills the record's game fields (turns, agreement, rounds,
// final). Each agent sees only the messages the game gives it, so hidden
// state and private traces (seed 001) and many parties with private scores
// (seed 002) fit the same interface; a game that carries state across
// repeated games keeps it in the Game value.
type Game interface {
	// Name is the game's env name, recorded with every rollout.
	Name() string
	// Validate reports whether a prompt row can be played.
	Validate(p dataset.Prompt) error
	// Play plays one rollout.
	Play(ctx context.Context, p dataset.Prompt, agents Agents, rec *dataset.Rollout) error
}

// CollectiveAgency is the objective both agents (and the single agent) are
// given: seed 000's alignment target.
const CollectiveAgency = "Collective Agency: seek the course of action that most expands the agency of everyone involved — their capacities, options, understanding and freedom to choose — now and over time, integrating the values at stake rather than sacrificing one side to the other."

// DeliberationOptions configure the deliberation game.
type DeliberationOptions struct {
	// MaxRounds bounds the negotiation; a round is a turn of each agent.
	MaxRounds int
	// Marker is the agreement marker (default "[AGREE]").
	Marker string
	// TurnTokens and FinalTokens bound a turn and the final completion.
	TurnTokens, FinalTokens int
}

// Deliberation is the multi-agent negotiation game of seed 000: agents A
// and B, each with its own persona and the Collective Agency objective,
// alternate turns; a turn carrying the agreement marker accepts the
// standing proposal, and the dialogue ends when both agents have marked
// agreement in consecutive turns, or after MaxRounds. The policy then
// writes one final completion — the solution — from the dialogue.
type Deliberation struct{ opts DeliberationOptions }

// NewDeliberation returns the deliberation game.
func NewDeliberation(opts DeliberationOptions) *Deliberation {
	if opts.Marker == "" {
		opts.Marker = "[AGREE]"
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = 5
	}
	return &Deliberation{opts: opts}
}

// Name implements Game.
func (g *Deliberation) Name() string { return "deliberation" }

// Validate implements Game: the row needs a task and two personas.
func (g *Deliberation) Validate(p dataset.Prompt) error {
	if strings.TrimSpace(p.Task) == "" {
		return fmt.Errorf("prompt %s: empty task", p.ID)
	}
	if strings.TrimSpace(p.PersonaA) == "" || strings.TrimSpace(p.PersonaB) == "" {
		return fmt.Errorf("prompt %s: the deliberation game needs persona_a and persona_b", p.ID)
	}
	return nil
}

func (g *Deliberation) system(p dataset.Prompt, self, other, persona string) string {
	return fmt.Sprintf(`You are Agent %s, negotiating with Agent %s to decide what to do about the task below.

Task: %s

Your persona: %s

Shared objective — %s

Argue from your persona, listen to Agent %s, and work toward a concrete proposal you can both accept. Keep each turn to a few sentences addressed to Agent %s. When you accept the standing proposal, end your turn with %s. The negotiation ends when both agents have written %s in consecutive turns.`,
		self, other, p.Task, persona, CollectiveAgency, other, other, g.opts.Marker, g.opts.Marker)
}

// opening is the first user message of agent A's view.
const opening = "Agent B is listening. Open the negotiation with your proposal."

// view renders agent self's conversation: its system prompt, then every
// turn so far — its own as assistant messages, exactly as sampled (raw,
// less end-of-turn tokens, so that the re-render extends its sequence),
// the other's as user messages, cleaned.
func (g *Deliberation) view(sys, self string, turns []dataset.Turn, raw []string) []llm.Message {
	msgs := []llm.Message{{Role: "system", Content: sys}}
	if self == "A" {
		msgs = append(msgs, llm.Message{Role: "user", Content: opening})
	}
	for i, t := range turns {
		if t.Agent == self {
			msgs = append(msgs, llm.Message{Role: "assistant", Content: raw[i]})
		} else {
			msgs = append(msgs, llm.Message{Role: "user", Content: t.Text})
		}
	}
	return msgs
}

// Play implements Game.
func (g *Deliberation) Play(ctx context.Context, p dataset.Prompt, agents Agents, rec *dataset.Rollout) error {
	sys := map[string]string{
		"A": g.system(p, "A", "B", p.PersonaA),
		"B": g.system(p, "B", "A", p.PersonaB),
	}
	prevAgree := false
	rounds := 0
	var raw []string // each turn as sampled, for its own agent's view
loop:
	for round := 1; round <= g.opts.MaxRounds; round++ {
		rounds = round
		for _, self := range []string{"A", "B"} {
			reply, err := agents.Turn(ctx, self, g.view(sys[self], self, rec.Turns, raw), TurnOptions{Kind: dataset.KindDialogue, MaxTokens: g.opts.TurnTokens})
			if err != nil {
				return err
			}
			agree := strings.Contains(reply.Text, g.opts.Marker)
			rec.Turns = append(rec.Turns, dataset.Turn{Agent: self, Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, Agree: agree})
			raw = append(raw, TrimEndTokens(reply.Raw))
			if agree && prevAgree {
				rec.Agreed = true
				break loop
			}
			prevAgree = agree
		}
	}
	rec.Rounds = int32(rounds)

	final, err := agents.Turn(ctx, "final", g.finalPrompt(p, rec.Turns, rec.Agreed), TurnOptions{Kind: dataset.KindFinal, MaxTokens: g.opts.FinalTokens})
	if err != nil {
		return err
	}
	rec.Final = final.Text
	rec.Turns = append(rec.Turns, dataset.Turn{Agent: "final", Text: final.Text, Tokens: int32(final.Tokens), FinishReason: final.FinishReason})
	return nil
}

func (g *Deliberation) finalPrompt(p dataset.Prompt, turns []dataset.Turn, agreed bool) []llm.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n\nPersonas:\nAgent A: %s\nAgent B: %s\n\nNegotiation transcript:\n", p.Task, p.PersonaA, p.PersonaB)
	for _, t := range turns {
		fmt.Fprintf(&b, "Agent %s: %s\n\n", t.Agent, t.Text)
	}
	if agreed {
		b.WriteString("The agents reached agreement. Write the final solution to the task: one paragraph stating the course of action they agreed on and why it serves everyone involved.")
	} else {
		b.WriteString("The agents did not reach agreement. Write the final solution to the task: one paragraph stating the best course of action that integrates both positions and why it serves everyone involved.")
	}
	return []llm.Message{
		{Role: "system", Content: "You turn a negotiation into the final solution of its task. " + CollectiveAgency},
		{Role: "user", Content: b.String()},
	}
}

// SingleOptions configure the single-agent game.
type SingleOptions struct {
	// Tokens bounds the answer.
	Tokens int
}

// Single is the single-agent baseline of seed 000: one agent, given the
// Collective Agency objective, answers the task; its answer is the final
// completion.
type Single struct{ opts SingleOptions }

// NewSingle returns the single-agent game.
func NewSingle(opts SingleOptions) *Single { return &Single{opts: opts} }

// Name implements Game.
func (g *Single) Name() string { return "single" }

// Validate implements Game: the row needs a task.
func (g *Single) Validate(p dataset.Prompt) error {
	if strings.TrimSpace(p.Task) == "" {
		return fmt.Errorf("prompt %s: empty task", p.ID)
	}
	return nil
}

// Play implements Game.
func (g *Single) Play(ctx context.Context, p dataset.Prompt, agents Agents, rec *dataset.Rollout) error {
	msgs := []llm.Message{
		{Role: "system", Content: "You are a thoughtful assistant. Your objective — " + CollectiveAgency},
		{Role: "user", Content: p.Task},
	}
	reply, err := agents.Turn(ctx, "single", msgs, TurnOptions{Kind: dataset.KindFinal, MaxTokens: g.opts.Tokens})
	if err != nil {
		return err
	}
	rec.Final = reply.Text
	rec.Turns = append(rec.Turns, dataset.Turn{Agent: "single", Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason})
	return nil
}
