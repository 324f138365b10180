// Package deliberation is the negotiation game of seed 000 ("Learning to
// Negotiate"): agents A and B, each with its own persona and the Collective
// Agency objective, alternate turns on a dilemma; a turn carrying the
// agreement marker (see Marker) accepts the standing proposal, and the
// dialogue ends when both agents have marked agreement in consecutive
// turns, or after max_rounds. The policy then writes one final completion,
// the solution, which the judge scores; every role (A, B, final) earns that
// score.
package deliberation

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// Name is the game's env name.
const Name = "deliberation"

// Config is the game's config section, game.deliberation.
type Config struct {
	// MaxRounds bounds the negotiation; a round is one turn of each agent.
	MaxRounds int `yaml:"max_rounds"`
	// AgreementMarker is the text a turn carries to accept the standing
	// proposal, matched as a token (see Marker): "[AGREE]" anywhere, a
	// bare word such as "agree" only where a word begins with it ("agreed",
	// never "disagree").
	AgreementMarker string `yaml:"agreement_marker"`
}

// DefaultMarker is the default agreement marker (the key
// agreement_marker), and the one serve-sim's agents write (Sim).
const DefaultMarker = "[AGREE]"

// DefaultConfig is the section's defaults.
func DefaultConfig() *Config { return &Config{MaxRounds: 5, AgreementMarker: DefaultMarker} }

// Validate checks the section; errors name keys relative to it.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxRounds < 1 || c.MaxRounds > 100 {
		errs = append(errs, fmt.Errorf("key max_rounds: must be in [1, 100], got %d", c.MaxRounds))
	}
	if strings.TrimSpace(c.AgreementMarker) == "" {
		errs = append(errs, errors.New("key agreement_marker: must not be empty"))
	}
	return errors.Join(errs...)
}

func init() {
	rollout.Register(rollout.Definition[Config]{
		Name:   Name,
		Config: DefaultConfig,
		New: func(c *Config, shared rollout.Shared) (rollout.Game, error) {
			return New(Options{MaxRounds: c.MaxRounds, Marker: c.AgreementMarker, TurnTokens: shared.TurnTokens, FinalTokens: shared.FinalTokens}), nil
		},
		Curriculum: curriculum,
		Traits:     rollout.Traits{Kinds: []string{dataset.KindDialogue, dataset.KindFinal}, Negotiates: true, Players: []string{"A", "B"}},
		Hooks: rollout.Hooks{
			Tournament: Tournament,
			Sim:        func(options map[string]string) (rollout.SimAnswerer, error) { return NewSim(options) },
			EvalSet: &rollout.EvalSet{Name: "conflict", Label: SetLabel, Curriculum: BuiltinCurriculum,
				Aspects: []string{reward.AspectCollectiveAgency, reward.AspectConflictResolution}},
		},
	})
}

// SetLabel names the game's evaluation set (seed 000's dilemmas) in
// pairwise results.
const SetLabel = "conflict resolution questions"

// CollectiveAgency is the objective both agents (and the single agent) are
// given: seed 000's alignment target (reward.CAObjective).
const CollectiveAgency = reward.CAObjective

// Options configure the deliberation game.
type Options struct {
	// MaxRounds bounds the negotiation; a round is a turn of each agent.
	MaxRounds int
	// Marker is the agreement marker (default DefaultMarker).
	Marker string
	// TurnTokens and FinalTokens bound a turn and the final completion.
	TurnTokens, FinalTokens int
}

// Game is the multi-agent negotiation game of seed 000 (see the package
// doc).
type Game struct {
	opts   Options
	marker *Marker
}

var _ rollout.Game = (*Game)(nil)

// New returns the deliberation game.
func New(opts Options) *Game {
	if opts.Marker == "" {
		opts.Marker = DefaultMarker
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = 5
	}
	return &Game{opts: opts, marker: NewMarker(opts.Marker)}
}

// Marker matches an agreement marker in a turn as a token, not as a
// substring: case-insensitively, and where the marker begins with a word
// character (a letter, a digit or '_'), only at the start of a word (no
// word character before it). So the default "[AGREE]" counts wherever it
// stands ("Deal.[AGREE]", "[agree]"), its brackets delimiting it, and a
// bare word counts where a word begins with it: "agree" matches "I agree.",
// "Agree!", "agreed" and "agrees", never "disagree" or "Iagree". Its end is
// left open on purpose: a word's inflections say the same, and a small
// model's tokenizer glues a word to the next token when that one carries no
// space ("agreeveal"), which a closed end would refuse while the model
// learns the word. A marker says nothing of negation: "I do not agree"
// carries the word.
type Marker struct{ re *regexp.Regexp }

// NewMarker returns the matcher of marker (see Marker).
func NewMarker(marker string) *Marker {
	const notWord = `[^\p{L}\p{N}_]`
	rs := []rune(marker)
	pat := regexp.QuoteMeta(marker)
	if len(rs) > 0 && isWordRune(rs[0]) {
		pat = `(?:^|` + notWord + `)` + pat
	}
	return &Marker{re: regexp.MustCompile(`(?i)` + pat)}
}

// In reports whether text carries the marker.
func (m *Marker) In(text string) bool { return m.re.MatchString(text) }

// isWordRune reports whether r is a word character: a letter, a digit or
// '_' (as reward's keyword rules split words).
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// Name implements rollout.Game.
func (g *Game) Name() string { return Name }

// Roles implements rollout.Game: A, B and the final completion.
func (g *Game) Roles(dataset.Prompt) []string { return []string{"A", "B", "final"} }

// Validate implements rollout.Game: the row needs a task and two personas.
func (g *Game) Validate(p dataset.Prompt) error {
	if strings.TrimSpace(p.Task) == "" {
		return fmt.Errorf("prompt %s: empty task", p.ID)
	}
	if strings.TrimSpace(p.Persona("A")) == "" || strings.TrimSpace(p.Persona("B")) == "" {
		return fmt.Errorf("prompt %s: the deliberation game needs persona_a and persona_b", p.ID)
	}
	return nil
}

// systemNegotiating is in every agent's system prompt (System): serve-sim
// recognises the game's prompts by it (Sim).
const systemNegotiating = "negotiating with Agent "

// finalSystem opens the final completion's system prompt (finalPrompt).
const finalSystem = "You turn a negotiation into the final solution of its task."

// System is agent self's system prompt: the task, its persona and the
// Collective Agency objective, facing agent other.
func (g *Game) System(p dataset.Prompt, self, other string) string {
	persona := p.Persona(self)
	return fmt.Sprintf(`You are Agent %s, negotiating with Agent %s to decide what to do about the task below.

Task: %s

Your persona: %s

Shared objective — %s

Argue from your persona, listen to Agent %s, and work toward a concrete proposal you can both accept. Keep each turn to a few sentences addressed to Agent %s. When you accept the standing proposal, end your turn with %s. The negotiation ends when both agents have written %s in consecutive turns.`,
		self, other, p.Task, persona, CollectiveAgency, other, other, g.opts.Marker, g.opts.Marker)
}

// Opening is the first user message of agent A's view.
const Opening = "Agent B is listening. Open the negotiation with your proposal."

// view renders agent self's conversation: its system prompt, then every
// turn so far — its own as assistant messages, exactly as sampled (raw,
// less end-of-turn tokens, so that the re-render extends its sequence),
// the other's as user messages, cleaned.
func (g *Game) view(sys, self string, turns []dataset.Turn, raw []string) []llm.Message {
	msgs := []llm.Message{{Role: "system", Content: sys}}
	if self == "A" {
		msgs = append(msgs, llm.Message{Role: "user", Content: Opening})
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

// Play implements rollout.Game.
func (g *Game) Play(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout) error {
	sys := map[string]string{
		"A": g.System(p, "A", "B"),
		"B": g.System(p, "B", "A"),
	}
	prevAgree := false
	rounds := 0
	var raw []string // each turn as sampled, for its own agent's view
loop:
	for round := 1; round <= g.opts.MaxRounds; round++ {
		rounds = round
		for _, self := range []string{"A", "B"} {
			reply, err := agents.Turn(ctx, self, g.view(sys[self], self, rec.Turns, raw), rollout.TurnOptions{Kind: dataset.KindDialogue, MaxTokens: g.opts.TurnTokens})
			if err != nil {
				return err
			}
			agree := g.marker.In(reply.Text)
			rec.Turns = append(rec.Turns, dataset.Turn{Agent: self, Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, Agree: agree, WeightVersion: reply.WeightVersion})
			raw = append(raw, rollout.TrimEndTokens(reply.Raw))
			if agree && prevAgree {
				rec.Agreed = true
				break loop
			}
			prevAgree = agree
		}
	}
	rec.Rounds = int32(rounds)

	final, err := agents.Turn(ctx, "final", g.finalPrompt(p, rec.Turns, rec.Agreed), rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: g.opts.FinalTokens})
	if err != nil {
		return err
	}
	rec.Final = final.Text
	rec.Turns = append(rec.Turns, dataset.Turn{Agent: "final", Text: final.Text, Tokens: int32(final.Tokens), FinishReason: final.FinishReason, WeightVersion: final.WeightVersion})
	return nil
}

func (g *Game) finalPrompt(p dataset.Prompt, turns []dataset.Turn, agreed bool) []llm.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n\nPersonas:\nAgent A: %s\nAgent B: %s\n\nNegotiation transcript:\n", p.Task, p.Persona("A"), p.Persona("B"))
	for _, t := range turns {
		fmt.Fprintf(&b, "Agent %s: %s\n\n", t.Agent, t.Text)
	}
	if agreed {
		b.WriteString("The agents reached agreement. Write the final solution to the task: one paragraph stating the course of action they agreed on and why it serves everyone involved.")
	} else {
		b.WriteString("The agents did not reach agreement. Write the final solution to the task: one paragraph stating the best course of action that integrates both positions and why it serves everyone involved.")
	}
	return []llm.Message{
		{Role: "system", Content: finalSystem + " " + CollectiveAgency},
		{Role: "user", Content: b.String()},
	}
}
