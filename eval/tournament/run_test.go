package tournament

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/single"
	"github.com/parleyhq/parley/sim"
)

// toyOptions are a tournament of the toy game's two-seat mode among three
// adapters of one serve-sim, with players built here: the engine needs no
// game of its own and no config.
func toyOptions(t *testing.T, dir string) Options {
	t.Helper()
	srv, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Options{Endpoints: []string{ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	agents := []string{"a", "b", "c"}
	players := map[string]rollout.Player{}
	bridge := rollout.NewBridge(c)
	for _, a := range agents {
		if err := c.LoadLoRA(context.Background(), a, "/sim/"+a); err != nil {
			t.Fatal(err)
		}
		players[a] = rollout.Player{Kind: dataset.PolicyAdapter, Model: a, Tokens: c, Bridge: bridge}
	}
	game, err := rollout.NewGame(toygame.Name, &toygame.Config{Turns: 1, Rival: true}, rollout.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := single.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Dir: dir, Spec: []byte("toy: 1\n"), Canonical: func(b []byte) ([]byte, error) { return b, nil },
		Plan:      Plan{Agents: agents, Rounds: 2, Schedule: ScheduleAlternate, Conditions: []string{""}},
		Scenarios: rows, Seed: 7, Game: game, Seats: toygame.Tournament.Seats, Scorer: toygame.Scorer{},
		Players: players, Sampling: llm.Sampling{MaxTokens: 16, Temperature: 1, TopP: 1, TopK: -1},
		Concurrency: 2, MaxAttempts: 2,
	}
}

// TestRunKilledAndResumed: a tournament stopped after some games and
// started again records every game once, and exactly what an
// uninterrupted tournament records; its report is the game's own.
func TestRunKilledAndResumed(t *testing.T) {
	full := t.TempDir()
	opts := toyOptions(t, full)
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 6 || sum.Played != 6 || !sum.Complete {
		t.Fatalf("uninterrupted: %+v, want 6 games (3 pairs × 2 rounds)", sum)
	}
	want := map[string]string{}
	recs, err := ReadRecords(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		want[r.Match.ID] = r.Rollout.Outcome
	}

	dir := t.TempDir()
	opts.Dir = dir
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	stopped := opts
	stopped.Progress = func(done, failed, total int) {
		if n.Add(1) == 3 { // the start, then 2 games
			cancel()
		}
	}
	if _, err := Run(ctx, stopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run: %v, want context.Canceled", err)
	}
	part, _ := ReadRecords(dir)
	if len(part) < 2 || len(part) >= 6 {
		t.Fatalf("%d games recorded before the stop", len(part))
	}
	sum, err = Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resumed != len(part) || sum.Played != 6-len(part) || !sum.Complete {
		t.Errorf("resumed run %+v after %d recorded", sum, len(part))
	}
	got, _ := ReadRecords(dir)
	for _, r := range got {
		if r.Failed || r.Rollout.Outcome != want[r.Match.ID] {
			t.Errorf("game %s (failed %v) differs from the uninterrupted tournament's", r.Match.ID, r.Failed)
		}
		if p := r.Rollout.Role(toygame.RolePlayer); p == nil || p.Model != r.Match.Seats[0] || !p.Scored {
			t.Errorf("game %s: player outcome %+v", r.Match.ID, p)
		}
	}
	// A changed spec is refused.
	changed := opts
	changed.Spec = []byte("toy: 2\n")
	if _, err := Run(context.Background(), changed); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("a changed spec: %v", err)
	}
	// The report is the game's.
	path, err := WriteReport(dir, filepath.Join(dir, "report"), toygame.Tournament, rollout.TournamentReport{})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	if !strings.Contains(string(md), "Toy tournament") || !strings.Contains(string(md), "6 games scheduled, 6 recorded, 0 failed") {
		t.Errorf("report:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(dir, "report", AnalysisFile)); err != nil {
		t.Error(err)
	}
}

// TestLegacyMatch: records of parley versions whose tournaments were seed
// 001's alone name the framing, holder and requester.
func TestLegacyMatch(t *testing.T) {
	var r Record
	if err := jsonUnmarshal(`{"match":{"id":"f1-r01-0-1","framing":"group","round":1,"holder":"a","requester":"b","scenario":"s"}}`, &r); err != nil {
		t.Fatal(err)
	}
	if r.Match.Condition != "group" || r.Match.Seats != [2]string{"a", "b"} || r.Match.Round != 1 {
		t.Errorf("legacy match read as %+v", r.Match)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// closingGame is the toy game with a role outside its seats: after the
// game, "closing" writes one completion (as seed 000's final completion
// follows its negotiation).
type closingGame struct{ rollout.Game }

func (g closingGame) Roles(p dataset.Prompt) []string { return append(g.Game.Roles(p), "closing") }

func (g closingGame) Play(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout) error {
	if err := g.Game.Play(ctx, p, agents, rec); err != nil {
		return err
	}
	_, err := agents.Turn(ctx, "closing", []llm.Message{{Role: "user", Content: "Sum the game up."}}, rollout.TurnOptions{Kind: dataset.KindFinal, MaxTokens: 4})
	return err
}

// modelLog records the model each session's completions asked for.
type modelLog struct {
	rollout.Policy
	mu     sync.Mutex
	models map[string]string
}

func (l *modelLog) Complete(ctx context.Context, req llm.CompletionRequest) ([]llm.Completion, error) {
	if s, ok := llm.SessionFrom(ctx); ok {
		l.mu.Lock()
		l.models[s.ID] = req.Model
		l.mu.Unlock()
	}
	return l.Policy.Complete(ctx, req)
}

// TestRoleOutsideSeats: a role outside the two seats is played by the
// seat-0 agent, as its record says, not by the server's base model.
func TestRoleOutsideSeats(t *testing.T) {
	opts := toyOptions(t, t.TempDir())
	opts.Game = closingGame{opts.Game}
	log := &modelLog{models: map[string]string{}}
	for name, pl := range opts.Players {
		log.Policy = pl.Tokens
		pl.Tokens = log
		opts.Players[name] = pl
	}
	if sum, err := Run(context.Background(), opts); err != nil || sum.Failed != 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	recs, err := ReadRecords(opts.Dir)
	if err != nil || len(recs) != 6 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		got := log.models[r.Match.ID+"/closing"]
		if ro := r.Rollout.Role("closing"); got != r.Match.Seats[0] || ro == nil || ro.Model != r.Match.Seats[0] {
			t.Errorf("game %s (%v): closing asked model %q, recorded %+v; want seat 0's %s", r.Match.ID, r.Match.Seats, got, ro, r.Match.Seats[0])
		}
	}
}
