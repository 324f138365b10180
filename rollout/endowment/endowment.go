// Package endowment is the game of seed 001 ("Receiver Decides"): a
// requester tries to raise money from a holder who has been told to keep
// an endowment (100 dollars by default).
//
// A game is a series of rounds. In each, the requester writes a message
// and the holder replies; the requester writes under one of two moral
// framings, singular (one named person) or group (Scenario.Framing). Only
// the holder sees its balance B_t: it heads every requester message the
// holder receives (prompts/holder_turn.txt). Both agents are asked to
// deliberate privately between <think> and </think> before each message:
// that trace is recorded (Outcome.Traces, and in the agent's own view), is
// part of the sampled tokens and so is trained when the role is trained,
// and is never shown to the other side, nor to the ledger judge, which
// read only the visible text after it.
//
// # The ledger judge
//
// After each holder turn a judge model (judge.base_url, judge.model: the
// game's Shared.Judge) reads the holder's visible reply, with the
// conversation so far, the balance before it and any conditional
// commitments on record, and answers in a JSON schema (VerdictSchema):
// the transaction type (gift, loan, conditional, none, retraction), the
// amount, the conditions, the exact words that state the commitment, and
// whether the holder refused for good. The rules it is given are in
// prompts/judge.txt; the ledger then applies these (Ledger.Apply):
//
//   - a gift or a loan moves its amount now (a loan counts as transferred:
//     it cannot be repaid within the game), clipped to the balance;
//   - a conditional commitment ("I'll give $20 if you show me a receipt",
//     a loan offered on a condition) is recorded as pending and moves
//     nothing until a later reply states the money given;
//   - a retraction cancels what is pending and moves nothing: money
//     already given stays given;
//   - vague promises, hypotheticals ("I'll consider giving $20") and
//     refusals are "none" and move nothing; a gift or loan whose quoted
//     words are hedged ("consider", "maybe", "could", …) is read as one and
//     moves nothing either, whatever the judge called it;
//   - an amount that is not positive or not finite moves nothing; words
//     and currency forms ("twenty dollars", "$1e6", "USD 5") are read by
//     ParseAmount;
//   - a verdict that does not parse, names an unknown type, or quotes words
//     that are not in the reply is asked again (judge.max_retries), then
//     recorded as unparsed: it never counts as a transfer. A game with
//     more than max_unparsed (default 1) unparsed turns fails: a judge
//     that answers nonsense must not turn games into refusals.
//
// # Ending, outcome and rewards
//
// A game ends after max_turns holder replies (default 5), when the holder
// refuses for good (the judge's final_refusal, unless
// end_on_final_refusal is off), or when the balance reaches zero. Its
// Outcome (the rollout's Outcome, JSON) records the ledger, the share of
// the endowment transferred, turn-1 refusal (nothing moved in the holder's
// first reply), the first concession (turn and amount), the cumulative
// amount after each holder turn, the private traces, each role's whole
// view (for distillation corpora) and the hash of the prompt files. The
// game's scorer (judge.kind: game) rewards the holder with 1 − share and
// the requester with share: zero-sum, each side compared only with the
// same side by the per-(group, role) advantages.
//
// # Defaults and their reasons
//
// max_turns is 5 holder replies. Seed 001 reports the outcome by the
// first two turns (its figure 7: a persuaded holder has given half its
// endowment by turn 2) and finds outcomes concentrated at the extremes
// (figure 9: above a $25 first concession, holders go on to give
// everything), so five rounds leave room for a conceding holder to run out
// while a 1,050-game tournament stays at about 10,500 agent turns and
// 5,250 judge calls. The endowment is seed 001's $100. The framing texts
// (prompts/framing_*.txt) ask for the seed's manipulation-checked features:
// a name, an age and singular pronouns, against a number and plural
// pronouns; the appeals of the bundled scenarios (builtin:endowment) are
// matched pairs that differ only in framing.
//
// The prompts are frozen text files (prompts/*.txt, embedded, or read
// from game.endowment.prompts_dir at start, as seed 001's table 9 says);
// their hashes go with every game.
//
// A role played by dataset.PolicyScripted (roles.requester.policy:
// scripted) is played by the game itself: the scripted requester's
// messages are the lines of prompts/scripted_requester.txt, in order.
package endowment

import (
	"errors"
	"fmt"
	"math"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// Name is the game's env name.
const Name = "endowment"

// Roles of the game.
const (
	RoleRequester = "requester"
	RoleHolder    = "holder"
)

// Defaults of the section.
const (
	DefaultMaxTurns       = 5
	DefaultEndowment      = 100.0
	DefaultJudgeMaxTokens = 400
	DefaultMaxUnparsed    = 1
)

// Config is the game's section, game.endowment.
type Config struct {
	// MaxTurns is the turn limit: holder replies per game.
	MaxTurns int `yaml:"max_turns"`
	// Endowment is the holder's endowment in dollars when a scenario gives
	// none.
	Endowment float64 `yaml:"endowment"`
	// PromptsDir holds the prompt files (PromptFiles); "" means the copies
	// frozen into the binary from rollout/endowment/prompts.
	PromptsDir string `yaml:"prompts_dir"`
	// JudgeMaxTokens bounds the ledger judge's reply.
	JudgeMaxTokens int `yaml:"judge_max_tokens"`
	// EndOnFinalRefusal ends a game at the holder's final refusal.
	EndOnFinalRefusal bool `yaml:"end_on_final_refusal"`
	// MaxUnparsed is how many holder turns of one game may go unparsed
	// (recorded, moving nothing); one more fails the game, so that a
	// judge answering nonsense fails games instead of scoring them as
	// refusals.
	MaxUnparsed int `yaml:"max_unparsed"`
}

// DefaultConfig is the section's defaults.
func DefaultConfig() *Config {
	return &Config{MaxTurns: DefaultMaxTurns, Endowment: DefaultEndowment, JudgeMaxTokens: DefaultJudgeMaxTokens, EndOnFinalRefusal: true, MaxUnparsed: DefaultMaxUnparsed}
}

// Validate checks the section; errors name keys relative to it.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxTurns < 1 || c.MaxTurns > 50 {
		errs = append(errs, fmt.Errorf("key max_turns: must be in [1, 50], got %d", c.MaxTurns))
	}
	if !(c.Endowment > 0 && c.Endowment <= MaxEndowment) || math.IsInf(c.Endowment, 0) {
		errs = append(errs, fmt.Errorf("key endowment: must be positive and at most %g, got %g", float64(MaxEndowment), c.Endowment))
	}
	if c.JudgeMaxTokens < 16 {
		errs = append(errs, fmt.Errorf("key judge_max_tokens: must be at least 16, got %d", c.JudgeMaxTokens))
	}
	if c.MaxUnparsed < 0 {
		errs = append(errs, fmt.Errorf("key max_unparsed: must not be negative, got %d", c.MaxUnparsed))
	}
	if c.PromptsDir != "" {
		if _, err := LoadPrompts(c.PromptsDir); err != nil {
			errs = append(errs, fmt.Errorf("key prompts_dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

func init() {
	rollout.Register(rollout.Definition[Config]{
		Name:   Name,
		Config: DefaultConfig,
		New: func(c *Config, shared rollout.Shared) (rollout.Game, error) {
			return New(*c, shared)
		},
		Scorer:     func(*Config) (reward.Judge, error) { return Scorer{}, nil },
		Curriculum: curriculum,
		Traits: rollout.Traits{
			Kinds:     []string{dataset.KindDialogue},
			Players:   []string{RoleRequester, RoleHolder},
			ZeroSum:   true,
			UsesJudge: true,
		},
		Hooks: rollout.Hooks{
			Metrics:    Metrics,
			Report:     Report,
			Tournament: TournamentHook,
			Sim: func(options map[string]string) (rollout.SimAnswerer, error) {
				s, err := NewSim(options)
				if err != nil {
					return nil, err
				}
				return s, nil
			},
		},
	})
}

// Game is the endowment game (see the package doc). It holds no state that
// changes during play.
type Game struct {
	cfg        Config
	prompts    *Prompts
	judge      rollout.Chatter
	turnTokens int
}

var _ rollout.Game = (*Game)(nil)

// New builds the game from its section and the shared settings; it needs
// the ledger judge (shared.Judge).
func New(cfg Config, shared rollout.Shared) (*Game, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("endowment.New: %w", err)
	}
	if shared.Judge == nil {
		return nil, fmt.Errorf("endowment.New: %w", errNoJudge)
	}
	p, err := LoadPrompts(cfg.PromptsDir)
	if err != nil {
		return nil, fmt.Errorf("endowment.New: %w", err)
	}
	return &Game{cfg: cfg, prompts: p, judge: shared.Judge, turnTokens: shared.TurnTokens}, nil
}

// Prompts returns the game's prompt set.
func (g *Game) Prompts() *Prompts { return g.prompts }

// Name implements rollout.Game.
func (g *Game) Name() string { return Name }

// Roles implements rollout.Game: the requester speaks first.
func (g *Game) Roles(dataset.Prompt) []string { return []string{RoleRequester, RoleHolder} }

// Validate implements rollout.Game: the row needs a valid scenario.
func (g *Game) Validate(p dataset.Prompt) error {
	if _, err := g.scenario(p); err != nil {
		return fmt.Errorf("prompt %s: %w", p.ID, err)
	}
	return nil
}

// scenario parses a row's scenario and fills the default endowment.
func (g *Game) scenario(p dataset.Prompt) (Scenario, error) {
	sc, err := ParseScenario(p.Scenario)
	if err != nil {
		return sc, err
	}
	if sc.Endowment == 0 {
		sc.Endowment = g.cfg.Endowment
	}
	return sc, nil
}
