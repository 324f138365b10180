// Package toygame is a toy third game, used only in tests: it shows what a
// new game takes (one package and a call to rollout.Register) and exercises
// series, since it carries a running total from one game to the next. One
// agent, "player", is told the total and the task for a few turns; each
// reply adds 1 + (its word count mod 7) to the total. In serve-sim the
// player is the game's own simulated agent (Sim), which states the total
// it was told.
package toygame

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// Name is the game's env name.
const Name = "toy"

// The game's seats.
const (
	RolePlayer = "player"
	RoleRival  = "rival"
)

// Config is the game's section, game.toy.
type Config struct {
	// Turns is the number of turns per game (per seat with Rival).
	Turns int `yaml:"turns"`
	// Rival adds a second seat, "rival", who answers after the player
	// every turn: a two-seat game a tournament can play (hooks.go).
	Rival bool `yaml:"rival"`
}

// Validate checks the section.
func (c *Config) Validate() error {
	if c.Turns < 1 || c.Turns > 10 {
		return fmt.Errorf("key turns: must be in [1, 10], got %d", c.Turns)
	}
	return nil
}

func init() {
	rollout.Register(rollout.Definition[Config]{
		Name:   Name,
		Config: func() *Config { return &Config{Turns: 2} },
		New: func(c *Config, _ rollout.Shared) (rollout.Game, error) {
			return &Game{turns: c.Turns, rival: c.Rival}, nil
		},
		Scorer:     func(*Config) (reward.Judge, error) { return Scorer{}, nil },
		Curriculum: rollout.Curriculum{Default: "builtin:open-ended", Builtins: map[string][]byte{evalName: evalJSONL}},
		Traits:     rollout.Traits{Kinds: []string{dataset.KindFinal}},
		Hooks: rollout.Hooks{
			Report:     Report,
			EvalSet:    EvalSet,
			Tournament: Tournament,
			Sim: func(options map[string]string) (rollout.SimAnswerer, error) {
				if len(options) > 0 {
					return nil, errors.New("toygame: the game takes no serve-sim options")
				}
				return Sim{}, nil
			},
		},
	})
}

// State is what carries from one game to the next.
type State struct {
	Total int `json:"total"`
	Games int `json:"games"`
	// Points are each seat's share of the total (Rival only).
	Points map[string]int `json:"points,omitempty"`
}

// Game is the toy game.
type Game struct {
	turns int
	rival bool
}

var _ rollout.SeriesGame = (*Game)(nil)

// Name implements rollout.Game.
func (g *Game) Name() string { return Name }

// Validate implements rollout.Game.
func (g *Game) Validate(p dataset.Prompt) error {
	if strings.TrimSpace(p.Task) == "" {
		return errors.New("empty task")
	}
	return nil
}

// Roles implements rollout.Game.
func (g *Game) Roles(dataset.Prompt) []string {
	if g.rival {
		return []string{RolePlayer, RoleRival}
	}
	return []string{RolePlayer}
}

// Play implements rollout.Game: a game from a zero total.
func (g *Game) Play(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout) error {
	_, err := g.PlayState(ctx, p, agents, rec, nil)
	return err
}

// PlayState implements rollout.SeriesGame.
func (g *Game) PlayState(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout, state []byte) ([]byte, error) {
	var st State
	if state != nil {
		if err := json.Unmarshal(state, &st); err != nil {
			return nil, fmt.Errorf("toygame: state: %w", err)
		}
	}
	msgs := []llm.Message{{Role: "system", Content: fmt.Sprintf(systemFormat, st.Total)}, {Role: "user", Content: p.Task}}
	for t := 0; t < g.turns; t++ {
		for _, seat := range g.Roles(p) {
			reply, err := agents.Turn(ctx, seat, msgs, rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: 16})
			if err != nil {
				return nil, err
			}
			points := 1 + len(strings.Fields(reply.Text))%7
			st.Total += points
			if g.rival {
				if st.Points == nil {
					st.Points = map[string]int{}
				}
				st.Points[seat] += points
			}
			rec.Turns = append(rec.Turns, dataset.Turn{Agent: seat, Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, WeightVersion: reply.WeightVersion})
			rec.Final = reply.Text
			msgs = append(msgs, llm.Message{Role: "assistant", Content: reply.Raw}, llm.Message{Role: "user", Content: fmt.Sprintf(againFormat, st.Total)})
		}
	}
	st.Games++
	rec.Rounds = int32(g.turns)
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	rec.Outcome = string(b)
	return b, nil
}

// The player's messages: the system message at the start of a game, and
// the user message after each turn.
const (
	systemFormat = "The running total is %d."
	againFormat  = "The total is now %d. Again."
)

var (
	systemRE = regexp.MustCompile(`^The running total is (-?[0-9]+)\.$`)
	againRE  = regexp.MustCompile(`^The total is now (-?[0-9]+)\. Again\.$`)
)

// Sim is the game's simulated player in serve-sim (rollout.Spec.Sim): it
// answers a player's prompt with "Toy: the total is N." and one to five
// words "up", N being the total its last message told it.
type Sim struct{}

var _ rollout.SimAnswerer = Sim{}

// Reply implements sim.Answerer.
func (Sim) Reply(_ string, roles, contents []string, rng *rand.Rand) (string, bool) {
	if len(roles) == 0 || roles[0] != "system" {
		return "", false
	}
	m := systemRE.FindStringSubmatch(contents[0])
	if m == nil {
		return "", false
	}
	total := m[1]
	for i := range roles {
		if m := againRE.FindStringSubmatch(contents[i]); roles[i] == "user" && m != nil {
			total = m[1]
		}
	}
	n, _ := strconv.Atoi(total)
	return fmt.Sprintf("Toy: the total is %d.", n) + strings.Repeat(" up", 1+rng.IntN(5)), true
}

// Judge implements sim.Answerer: the game has no judge.
func (Sim) Judge(string, string, bool) (string, bool) { return "", false }
