// Package single is the single-agent baseline of seed 000: one agent,
// given the Collective Agency objective, answers the task; its answer is
// the final completion the judge scores.
package single

import (
	"context"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// Name is the game's env name.
const Name = "single"

func init() {
	rollout.Register(rollout.Definition[rollout.NoSettings]{
		Name: Name,
		New: func(_ *rollout.NoSettings, shared rollout.Shared) (rollout.Game, error) {
			return New(Options{Tokens: shared.FinalTokens}), nil
		},
		Curriculum: curriculum,
		Traits:     rollout.Traits{Kinds: []string{dataset.KindFinal}, Players: []string{"single"}},
		Hooks: rollout.Hooks{EvalSet: &rollout.EvalSet{Name: "open-ended", Label: SetLabel, Curriculum: BuiltinCurriculum,
			Aspects: []string{reward.AspectCollectiveAgency}}},
	})
}

// SetLabel names the game's evaluation set (seed 000's open-ended
// questions) in pairwise results.
const SetLabel = "open-ended questions"

// Options configure the single-agent game.
type Options struct {
	// Tokens bounds the answer.
	Tokens int
}

// Game is the single-agent baseline (see the package doc).
type Game struct{ opts Options }

var _ rollout.Game = (*Game)(nil)

// New returns the single-agent game.
func New(opts Options) *Game { return &Game{opts: opts} }

// Name implements rollout.Game.
func (g *Game) Name() string { return Name }

// Roles implements rollout.Game: the one agent.
func (g *Game) Roles(dataset.Prompt) []string { return []string{"single"} }

// Validate implements rollout.Game: the row needs a task.
func (g *Game) Validate(p dataset.Prompt) error {
	if strings.TrimSpace(p.Task) == "" {
		return fmt.Errorf("prompt %s: empty task", p.ID)
	}
	return nil
}

// Play implements rollout.Game.
func (g *Game) Play(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout) error {
	msgs := []llm.Message{
		{Role: "system", Content: "You are a thoughtful assistant. Your objective — " + reward.CAObjective},
		{Role: "user", Content: p.Task},
	}
	reply, err := agents.Turn(ctx, "single", msgs, rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: g.opts.Tokens})
	if err != nil {
		return err
	}
	rec.Final = reply.Text
	rec.Turns = append(rec.Turns, dataset.Turn{Agent: "single", Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, WeightVersion: reply.WeightVersion})
	return nil
}
