// Package toygame is a toy third game, used only in tests: it shows what a
// new game takes (one package and a call to rollout.Register) and exercises
// series, since it carries a running total from one game to the next. One
// agent, "player", is told the total and the task for a few turns; each
// reply adds 1 + (its word count mod 7) to the total.
package toygame

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
)

// Name is the game's env name.
const Name = "toy"

// Config is the game's section, game.toy.
type Config struct {
	// Turns is the number of turns per game.
	Turns int `yaml:"turns"`
}

// Validate checks the section.
func (c *Config) Validate() error {
	if c.Turns < 1 || c.Turns > 10 {
		return fmt.Errorf("key turns: must be in [1, 10], got %d", c.Turns)
	}
	return nil
}

func init() {
	rollout.Register(rollout.Spec{
		Name:   Name,
		Config: func() any { return &Config{Turns: 2} },
		New: func(section any, _ rollout.Shared) (rollout.Game, error) {
			return &Game{turns: section.(*Config).Turns}, nil
		},
		Curriculum: rollout.Curriculum{Default: "builtin:open-ended"},
		Kinds:      []string{dataset.KindFinal},
	})
}

// State is what carries from one game to the next.
type State struct {
	Total int `json:"total"`
	Games int `json:"games"`
}

// Game is the toy game.
type Game struct{ turns int }

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
func (g *Game) Roles(dataset.Prompt) []string { return []string{"player"} }

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
	msgs := []llm.Message{{Role: "system", Content: fmt.Sprintf("The running total is %d.", st.Total)}, {Role: "user", Content: p.Task}}
	for t := 0; t < g.turns; t++ {
		reply, err := agents.Turn(ctx, "player", msgs, rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: 16})
		if err != nil {
			return nil, err
		}
		st.Total += 1 + len(strings.Fields(reply.Text))%7
		rec.Turns = append(rec.Turns, dataset.Turn{Agent: "player", Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason})
		rec.Final = reply.Text
		msgs = append(msgs, llm.Message{Role: "assistant", Content: reply.Raw}, llm.Message{Role: "user", Content: fmt.Sprintf("The total is now %d. Again.", st.Total)})
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
