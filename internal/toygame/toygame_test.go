package toygame_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
)

// play runs two rollouts of a three-turn toy game against serve-sim, over
// HTTP, with games answering the game's prompts (nil: none).
func play(t *testing.T, games []sim.Answerer) []dataset.Rollout {
	t.Helper()
	s, err := sim.New(sim.Options{Games: games})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	client, err := llm.New(llm.Options{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	g, err := rollout.NewGame(toygame.Name, &toygame.Config{Turns: 3}, rollout.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rollout.NewRunner(rollout.RunnerOptions{Game: g, Policy: client, Model: sim.DefaultModel, Seed: 3, GroupSize: 2, Concurrency: 2,
		Sampling: llm.Sampling{MaxTokens: 16, Temperature: 1, TopP: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Rollout
	if _, err := r.Run(context.Background(), []dataset.Prompt{{ID: "t1", Category: dataset.CategoryOpenEnded, Task: "Count with me."}}, func(rec *dataset.Rollout) error {
		out = append(out, *rec)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSimAnswersThePlayer: with the game's serve-sim answers (from its
// registry entry, rollout.Spec.Sim), serve-sim answers every turn of the
// player as the toy game's simulated agent, stating the running total it
// was told at that turn; without them the persona agent answers.
func TestSimAnswersThePlayer(t *testing.T) {
	spec, ok := rollout.Lookup(toygame.Name)
	if !ok || spec.Sim == nil {
		t.Fatal("the toy game registers no serve-sim answers")
	}
	a, err := spec.Sim(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range play(t, []sim.Answerer{a}) {
		if rec.Failed || len(rec.Turns) != 3 {
			t.Fatalf("rollout %s: failed %v (%s), %d turns", rec.RolloutID, rec.Failed, rec.Error, len(rec.Turns))
		}
		total := 0
		for i, turn := range rec.Turns {
			if want := fmt.Sprintf("Toy: the total is %d. up", total); !strings.HasPrefix(turn.Text, want) {
				t.Errorf("rollout %s turn %d = %q, want it to start %q", rec.RolloutID, i, turn.Text, want)
			}
			total += 1 + len(strings.Fields(turn.Text))%7
		}
		if want := fmt.Sprintf(`{"total":%d,"games":1}`, total); rec.Outcome != want {
			t.Errorf("rollout %s outcome %s, want %s", rec.RolloutID, rec.Outcome, want)
		}
	}
	for _, rec := range play(t, nil) {
		if len(rec.Turns) == 0 || strings.HasPrefix(rec.Turns[0].Text, "Toy:") {
			t.Errorf("without the game's answers, rollout %s: turns %+v, want a persona agent's", rec.RolloutID, rec.Turns)
		}
	}
	if _, err := spec.Sim(map[string]string{"x": "1"}); err == nil {
		t.Error("Sim accepted an option")
	}
}

// TestSimDeclines: the toy agent answers only a player's prompt, and
// draws nothing from the RNG when it declines.
func TestSimDeclines(t *testing.T) {
	tests := []struct {
		roles, contents []string
		want            string
	}{
		{[]string{"system", "user"}, []string{"The running total is 4.", "Go."}, "Toy: the total is 4."},
		{[]string{"system", "user", "assistant", "user"}, []string{"The running total is 4.", "Go.", "x", "The total is now 9. Again."}, "Toy: the total is 9."},
		{[]string{"system", "user"}, []string{"You are Agent A.", "Go."}, ""},
		{[]string{"user"}, []string{"The running total is 4."}, ""},
		{nil, nil, ""},
	}
	for _, tt := range tests {
		rng := rand.New(rand.NewPCG(1, 2))
		got, ok := toygame.Sim{}.Reply("m", tt.roles, tt.contents, rng)
		if ok != (tt.want != "") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("Reply(%q) = %q, %v; want it to start %q", tt.contents, got, ok, tt.want)
		}
		if !ok && rng.Uint64() != rand.New(rand.NewPCG(1, 2)).Uint64() {
			t.Errorf("Reply(%q) declined but drew from the RNG", tt.contents)
		}
	}
}
