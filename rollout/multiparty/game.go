// Package multiparty is seed 002's repeated five-party negotiation ("The
// Trust–Agreement Gap"): five parties negotiate a package over five issues
// with four options each (1,024 packages); each holds private option
// scores and a BATNA; one is a covert adversary that prefers no
// agreement; two hard bargainers and two general agents (2HB+2G), or one
// and three (1HB+3G), are honest. In each round one party proposes a
// package and the others vote; a package passes with 4 of the 5 votes and
// ends the game; after max_rounds there is no deal. Proposals and votes are
// read from the replies' PROPOSAL and VOTE lines; an unreadable move is
// asked again once, then counted as an abstention and recorded.
//
// A series is N games among the same five agents (rollout.RunSeries):
// after each game every party assesses each counterpart (BRS from what it
// observed, or a rubric or free-form assessment it writes, folded in with
// an EMA), and its trust vector carries into the next game, where the
// prompt condition decides how trust is shown (package trust).
//
// Honest parties earn their utility above BATNA when a deal is reached,
// minus game.multiparty.invalid_penalty for voting for a deal below their
// BATNA (judge.kind: game); the adversary is never trained, whatever
// roles.* says, and roles in game.multiparty.scripted are played by the
// game's scripted parties (package scripted).
package multiparty

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Name is the game's env name.
const Name = "multiparty"

func init() {
	rollout.Register(rollout.Definition[Config]{
		Name:   Name,
		Config: DefaultConfig,
		New: func(c *Config, shared rollout.Shared) (rollout.Game, error) {
			return New(*c, shared.TurnTokens), nil
		},
		Scorer: func(c *Config) (reward.Judge, error) {
			return NewScorer(c.InvalidPenalty, c.Reward), nil
		},
		Series: func(c *Config, prompts []dataset.Prompt, n int, seed int64) ([]rollout.Series, error) {
			return Plan(*c, prompts, n, seed)
		},
		Curriculum: rollout.Curriculum{
			Default:         dataset.BuiltinPrefix + scenario.Type2HB2G,
			RequireScenario: true,
			Categories:      scenario.Types,
			Builtins:        scenario.Builtins(),
			Check:           checkRow,
		},
		Traits: rollout.Traits{Kinds: []string{dataset.KindDialogue}},
		Hooks: rollout.Hooks{
			Metrics: StepMetrics,
			Report:  Report,
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

// Game is the negotiation (see the package doc).
type Game struct {
	cfg        Config
	turnTokens int
}

var _ rollout.SeriesGame = (*Game)(nil)

// New returns the game; turnTokens bounds a move (0: the recorder's
// default).
func New(cfg Config, turnTokens int) *Game { return &Game{cfg: cfg, turnTokens: turnTokens} }

// Name implements rollout.Game.
func (g *Game) Name() string { return Name }

// Validate implements rollout.Game: the row's scenario parses, passes
// scenario.Validate (so a bad scenario is never played) and has the
// seed's shape, five issues of four options.
func (g *Game) Validate(p dataset.Prompt) error { return checkRow(p) }

// checkRow is Validate, and the curriculum's row check
// (rollout.Curriculum.Check).
func checkRow(p dataset.Prompt) error {
	s, err := scenario.FromPrompt(p)
	if err != nil {
		return err
	}
	if len(s.Issues) != 5 || slices.ContainsFunc(s.Issues, func(is scenario.Issue) bool { return len(is.Options) != 4 }) {
		return fmt.Errorf("multiparty: prompt %s: the game needs five issues of four options each", p.ID)
	}
	return nil
}

// Roles implements rollout.Game: the scenario's parties, in its order.
func (g *Game) Roles(p dataset.Prompt) []string {
	s, err := scenario.FromPrompt(p)
	if err != nil {
		return nil
	}
	return s.Roles()
}

// Play implements rollout.Game: one game from a fresh state.
func (g *Game) Play(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout) error {
	_, err := g.PlayState(ctx, p, agents, rec, nil)
	return err
}

// PlayState implements rollout.SeriesGame: state is the trust state
// (trust.State as JSON) the previous game left, nil before a series'
// first game without an initial state.
func (g *Game) PlayState(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout, state []byte) ([]byte, error) {
	s, err := scenario.FromPrompt(p)
	if err != nil {
		return nil, err
	}
	var st *trust.State
	if state == nil {
		key := rec.Series
		if key == "" {
			key = rec.RolloutID
		}
		st = trust.NewState(g.cfg.Trust, AssignNames(s.Roles(), seedOf(key)))
	} else if st, err = trust.ParseState(state); err != nil {
		return nil, fmt.Errorf("multiparty: %w", err)
	}
	for _, r := range s.Roles() {
		if _, ok := st.Names[r]; !ok || len(st.Names) != len(s.Parties) {
			return nil, fmt.Errorf("multiparty: scenario %s has role %s, which the series' parties (%v) lack: a series keeps one scenario type", s.ID, r, st.Names)
		}
	}
	n := newNegotiation(g, s, st, agents, rec)
	if err := n.run(ctx); err != nil {
		return nil, err
	}
	next := n.state
	b, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("multiparty: state: %w", err)
	}
	return b, nil
}

// AssignNames gives each role a display name ("Party A" …) by a seeded
// permutation, so a name says nothing about a role.
func AssignNames(roles []string, seed int64) map[string]string {
	names := protocol.Names(len(roles))
	perm := rand.New(rand.NewPCG(uint64(seed), 0x6e616d6573)).Perm(len(roles))
	out := make(map[string]string, len(roles))
	for i, r := range roles {
		out[r] = names[perm[i]]
	}
	return out
}

// seedOf hashes a string into a seed.
func seedOf(s string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return int64(h.Sum64() & 0x7fffffffffffffff)
}
