package single_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/single"
)

// agent answers every turn with answer (or fails with err) and records
// what it was asked.
type agent struct {
	answer string
	err    error
	role   string
	msgs   []llm.Message
	opts   rollout.TurnOptions
	calls  int
}

func (a *agent) Turn(_ context.Context, role string, msgs []llm.Message, opts rollout.TurnOptions) (rollout.Reply, error) {
	a.calls++
	a.role, a.msgs, a.opts = role, msgs, opts
	if a.err != nil {
		return rollout.Reply{}, a.err
	}
	return rollout.Reply{Text: a.answer, Raw: a.answer + "<|im_end|>", Tokens: 5, FinishReason: "length", WeightVersion: 3}, nil
}

// TestPlay: the one agent is given the Collective Agency objective and
// the task, answers once as the final completion within the game's token
// bound, and its answer is the rollout's final.
func TestPlay(t *testing.T) {
	g := single.New(single.Options{Tokens: 77})
	a := &agent{answer: "Plant more trees."}
	var rec dataset.Rollout
	if err := g.Play(context.Background(), dataset.Prompt{ID: "q", Task: "How should a town spend its park budget?"}, a, &rec); err != nil {
		t.Fatal(err)
	}
	if a.calls != 1 || a.role != "single" || a.opts != (rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: 77}) {
		t.Errorf("asked %d turns, last of %s with %+v; want one final turn of 77 tokens", a.calls, a.role, a.opts)
	}
	if len(a.msgs) != 2 || a.msgs[0].Role != "system" || !strings.Contains(a.msgs[0].Content, reward.CAObjective) ||
		a.msgs[1] != (llm.Message{Role: "user", Content: "How should a town spend its park budget?"}) {
		t.Errorf("messages %+v: want the objective as the system message and the task", a.msgs)
	}
	want := dataset.Turn{Agent: "single", Text: "Plant more trees.", Tokens: 5, FinishReason: "length", WeightVersion: 3}
	if rec.Final != "Plant more trees." || len(rec.Turns) != 1 || rec.Turns[0].Agent != want.Agent || rec.Turns[0].Text != want.Text ||
		rec.Turns[0].Tokens != want.Tokens || rec.Turns[0].FinishReason != want.FinishReason || rec.Turns[0].WeightVersion != want.WeightVersion {
		t.Errorf("final %q, turns %+v; want %+v", rec.Final, rec.Turns, want)
	}
	if rec.Agreed || rec.Rounds != 0 {
		t.Errorf("agreed %v in %d rounds: the single agent negotiates nothing", rec.Agreed, rec.Rounds)
	}
}

// TestPlayFails: a turn that fails fails the game, recording nothing.
func TestPlayFails(t *testing.T) {
	var rec dataset.Rollout
	err := single.New(single.Options{}).Play(context.Background(), dataset.Prompt{ID: "q", Task: "t"}, &agent{err: errors.New("the server is gone")}, &rec)
	if err == nil || !strings.Contains(err.Error(), "the server is gone") || len(rec.Turns) != 0 || rec.Final != "" {
		t.Errorf("Play = %v, turns %+v: want the turn's error and nothing recorded", err, rec.Turns)
	}
}

// TestValidate: a row needs a task, nothing else.
func TestValidate(t *testing.T) {
	g := single.New(single.Options{})
	tests := []struct {
		p    dataset.Prompt
		want string
	}{
		{dataset.Prompt{ID: "q", Task: "Why?"}, ""},
		{dataset.Prompt{ID: "q", Task: " \n"}, "prompt q: empty task"},
		{dataset.Prompt{ID: "r"}, "prompt r: empty task"},
	}
	for _, tt := range tests {
		err := g.Validate(tt.p)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.p, err, tt.want)
		}
	}
	if got := g.Roles(dataset.Prompt{}); len(got) != 1 || got[0] != "single" || g.Name() != single.Name {
		t.Errorf("roles %v of %s, want [single] of %s", got, g.Name(), single.Name)
	}
}

// TestRegistered: the game has no settings; the registry builds it with
// the shared final-completion bound, and registers the open-ended set.
func TestRegistered(t *testing.T) {
	spec, ok := rollout.Lookup(single.Name)
	if !ok {
		t.Fatal("the single game is not registered")
	}
	if spec.Config != nil || spec.Scorer != nil || spec.Series != nil || spec.Tournament != nil {
		t.Error("the single game registers settings, a scorer, series or a tournament")
	}
	if len(spec.Kinds) != 1 || spec.Kinds[0] != dataset.KindFinal || len(spec.Players) != 1 || spec.Players[0] != "single" {
		t.Errorf("kinds %v players %v, want final and single", spec.Kinds, spec.Players)
	}
	g, err := rollout.NewGame(single.Name, nil, rollout.Shared{TurnTokens: 10, FinalTokens: 99})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{answer: "ok"}
	if err := g.Play(context.Background(), dataset.Prompt{ID: "q", Task: "t"}, a, &dataset.Rollout{}); err != nil || a.opts.MaxTokens != 99 {
		t.Errorf("the registered game's answer bound %d (%v), want shared.FinalTokens 99", a.opts.MaxTokens, err)
	}
	es := spec.EvalSet
	if es == nil || es.Name != "open-ended" || es.Label != single.SetLabel || es.Curriculum != "builtin:open-ended" {
		t.Fatalf("eval set %+v, want open-ended on builtin:open-ended", es)
	}
	rows, err := dataset.LoadPrompts(es.Curriculum, spec.LoadOptions())
	if err != nil || len(rows) == 0 {
		t.Fatalf("the eval set's rows: %d, %v", len(rows), err)
	}
	for _, p := range rows {
		if err := g.Validate(p); err != nil {
			t.Errorf("eval row %s: %v", p.ID, err)
		}
	}
}
