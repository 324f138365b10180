package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/killtest"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
)

// seriesFixture is 3 series of 10 toy games each.
func seriesFixture() []rollout.Series {
	var out []rollout.Series
	for s := range 3 {
		sr := rollout.Series{ID: fmt.Sprintf("series-%d", s)}
		for g := range 10 {
			sr.Games = append(sr.Games, dataset.Prompt{ID: fmt.Sprintf("q%d", g), Category: dataset.CategoryOpenEnded,
				Task: fmt.Sprintf("Name one thing a town could share, idea %d of series %d.", g, s)})
		}
		out = append(out, sr)
	}
	return out
}

// runToySeries plays the fixture against an in-process serve-sim whose
// replies take latency, recording under dir.
func runToySeries(ctx context.Context, dir string, latency time.Duration) (rollout.SeriesSummary, error) {
	opts, done, err := toyOptions(latency)
	if err != nil {
		return rollout.SeriesSummary{}, err
	}
	defer done()
	opts.Concurrency = 2
	return rollout.RunSeries(ctx, opts, dir, seriesFixture())
}

// toyOptions are runner options for the toy game against an in-process
// serve-sim whose replies take latency; done stops the server.
func toyOptions(latency time.Duration) (opts rollout.RunnerOptions, done func(), err error) {
	s, err := sim.New(sim.Options{LatencyMedian: latency})
	if err != nil {
		return opts, nil, err
	}
	srv := httptest.NewServer(s.Handler())
	client, err := llm.New(llm.Options{Endpoints: []string{srv.URL}})
	if err != nil {
		srv.Close()
		s.Close()
		return opts, nil, err
	}
	done = func() { client.Close(); srv.Close(); s.Close() }
	g, err := rollout.NewGame(toygame.Name, nil, rollout.Shared{})
	if err != nil {
		done()
		return opts, nil, err
	}
	return rollout.RunnerOptions{
		Game: g, Policy: client, Model: sim.DefaultModel, Seed: 9,
		Sampling: llm.Sampling{MaxTokens: 16, Temperature: 1, TopP: 1},
	}, done, nil
}

// TestSeriesReportsGames: RunSeries tells OnGames of every game, the
// recorded ones of a resumed series at once and each played one, so
// `parley series` draws a progress bar of its games.
func TestSeriesReportsGames(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name             string
		series           []rollout.Series
		wantCalls, games int
	}{
		{"fresh: one call per game", seriesFixture()[:1], 10, 10},
		{"resumed: the recorded games at once, then the new ones", seriesFixture()[:2], 1 + 10, 20},
		{"done: the recorded games of each series", seriesFixture()[:2], 2, 20},
	}
	for _, tt := range tests {
		opts, done, err := toyOptions(0)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		calls, games := 0, 0
		opts.OnGames = func(n int) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			games += n
		}
		_, err = rollout.RunSeries(context.Background(), opts, dir, tt.series)
		done()
		if err != nil {
			t.Fatal(err)
		}
		if calls != tt.wantCalls || games != tt.games {
			t.Errorf("%s: OnGames called %d times for %d games, want %d for %d", tt.name, calls, games, tt.wantCalls, tt.games)
		}
	}
}

// TestSeriesChild is the child process of TestSeriesResumesAfterKill.
func TestSeriesChild(t *testing.T) {
	dir := os.Getenv("PARLEY_TEST_SERIES_DIR")
	if dir == "" {
		t.Skip("child of TestSeriesResumesAfterKill")
	}
	if _, err := runToySeries(context.Background(), dir, 25*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// comparable strips the parts of a record that depend on timing.
func comparable(r rollout.GameRecord) rollout.GameRecord {
	r.Rollout.StartedUnixMS, r.Rollout.RolloutMS = 0, 0
	return r
}

// TestSeriesResumesAfterKill runs 3 series of 10 games with carried state
// in a child process, SIGKILLs it at random points until it finishes, and
// checks that every record and the final states equal an uninterrupted
// run's.
func TestSeriesResumesAfterKill(t *testing.T) {
	want := t.TempDir()
	sum, err := runToySeries(context.Background(), want, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Played != 30 || sum.Failed != 0 {
		t.Fatalf("uninterrupted run = %+v, want 30 games played", sum)
	}
	got := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	recorded := func() int {
		n := 0
		for _, s := range seriesFixture() {
			recs, _ := rollout.ReadSeries(got, s.ID)
			n += len(recs)
		}
		return n
	}
	// A kill lands 0 to 100 ms after a run has recorded a game.
	kills := killtest.Until(t, "TestSeriesChild", []string{"PARLEY_TEST_SERIES_DIR=" + got}, recorded,
		func() time.Duration { return time.Duration(rng.IntN(100)) * time.Millisecond })
	if kills < 2 {
		t.Fatalf("%d kills landed before the child finished; the test needs a slower child", kills)
	}
	for _, s := range seriesFixture() {
		a, err := rollout.ReadSeries(want, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rollout.ReadSeries(got, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != 10 || len(b) != 10 {
			t.Fatalf("%s: %d and %d games recorded, want 10", s.ID, len(a), len(b))
		}
		for i := range a {
			ja, _ := json.Marshal(comparable(a[i]))
			jb, _ := json.Marshal(comparable(b[i]))
			if string(ja) != string(jb) {
				t.Errorf("%s game %d differs after %d kills:\n%s\nwant\n%s", s.ID, i, kills, jb, ja)
			}
		}
		var st toygame.State
		if err := json.Unmarshal(b[9].State, &st); err != nil || st.Games != 10 || st.Total < 10 {
			t.Errorf("%s: final state %s, want 10 games and a total of at least 10", s.ID, b[9].State)
		}
	}
	t.Logf("%d kills", kills)
}

func TestSeriesErrors(t *testing.T) {
	delib, err := rollout.NewGame("deliberation", nil, rollout.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	toy, _ := rollout.NewGame(toygame.Name, nil, rollout.Shared{})
	pol := &bytePolicy{calls: map[string]int{}}
	dir := t.TempDir()
	tests := []struct {
		name   string
		game   rollout.Game
		series []rollout.Series
		want   string
	}{
		{"not a series game", delib, seriesFixture(), "not a SeriesGame"},
		{"bad id", toy, []rollout.Series{{ID: "../x"}}, "not a plain name"},
		{"repeated id", toy, []rollout.Series{{ID: "a"}, {ID: "a"}}, "repeated"},
		{"bad row", toy, []rollout.Series{{ID: "a", Games: []dataset.Prompt{{ID: "x"}}}}, "empty task"},
	}
	for _, tt := range tests {
		_, err := rollout.RunSeries(context.Background(), rollout.RunnerOptions{Game: tt.game, Policy: pol, Model: "m"}, dir, tt.series)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: RunSeries = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	// A gap in the records is named.
	if _, err := rollout.RunSeries(context.Background(), rollout.RunnerOptions{Game: toy, Policy: pol, Model: "m"}, dir, seriesFixture()[:1]); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "series-0", "game-000003.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := rollout.ReadSeries(dir, "series-0"); err == nil || !strings.Contains(err.Error(), "expected game 3") {
		t.Errorf("ReadSeries with a gap = %v, want it named", err)
	}
	// A game that fails carries the state before it.
	failing := &bytePolicy{calls: map[string]int{}, failAfter: 5}
	dir2 := t.TempDir()
	sum, err := rollout.RunSeries(context.Background(), rollout.RunnerOptions{Game: toy, Policy: failing, Model: "m"}, dir2, seriesFixture()[:1])
	if err != nil || sum.Failed != 1 || sum.Played != 10 {
		t.Fatalf("RunSeries with a failing turn = %+v, %v; want 10 played, 1 failed", sum, err)
	}
	recs, _ := rollout.ReadSeries(dir2, "series-0")
	if !recs[2].Rollout.Failed || string(recs[2].State) != string(recs[1].State) {
		t.Errorf("failed game 2: failed %v, state %s, want the state of game 1 %s", recs[2].Rollout.Failed, recs[2].State, recs[1].State)
	}
	if sum.FirstErr == nil || !strings.Contains(sum.FirstErr.Error(), "series-0 game 2") {
		t.Errorf("FirstErr = %v, want the failed game named", sum.FirstErr)
	}
	// A rerun plays the failed game again, and the games after it (played
	// from the state before it); the games before it are resumed.
	sum, err = rollout.RunSeries(context.Background(), rollout.RunnerOptions{Game: toy, Policy: pol, Model: "m"}, dir2, seriesFixture()[:1])
	if err != nil || sum != (rollout.SeriesSummary{Series: 1, Played: 8, Resumed: 2, Retried: 8}) {
		t.Fatalf("RunSeries again = %+v, %v; want 8 played (retried), 2 resumed, none failed", sum, err)
	}
	recs, _ = rollout.ReadSeries(dir2, "series-0")
	for i, r := range recs {
		if r.Rollout.Failed {
			t.Errorf("game %d is still failed after the rerun: %s", i, r.Rollout.Error)
		}
	}
	if len(recs) != 10 || string(recs[2].State) == string(recs[1].State) {
		t.Errorf("after the rerun: %d games, game 2's state %s (game 1's %s), want 10 and game 2 played", len(recs), recs[2].State, recs[1].State)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestContinuationsShareDraws plays two groups of series continuations:
// the continuations of a group share the record's Seed (the game's own
// draws) and sample with distinct seeds, so their replies differ; the
// groups' seeds differ.
func TestContinuationsShareDraws(t *testing.T) {
	opts, done, err := toyOptions(0)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	opts.GroupSize, opts.Concurrency, opts.Step = 4, 4, 3
	r, err := rollout.NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	games := seriesFixture()
	jobs := []rollout.StateJob{
		{Series: games[0].ID, Index: 2, Prompt: games[0].Games[2], State: []byte(`{"total":5,"games":2}`)},
		{Series: games[1].ID, Index: 0, Prompt: games[1].Games[0]},
	}
	seeds := map[string]map[int64]bool{}
	texts := map[string]map[string]bool{}
	if _, err := r.RunFromStates(context.Background(), jobs, func(rec *dataset.Rollout, _ []byte) error {
		if rec.Error != "" {
			return errors.New(rec.Error)
		}
		if seeds[rec.GroupID] == nil {
			seeds[rec.GroupID], texts[rec.GroupID] = map[int64]bool{}, map[string]bool{}
		}
		seeds[rec.GroupID][rec.Seed] = true
		texts[rec.GroupID][rec.Turns[0].Text] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seeds) != 2 {
		t.Fatalf("groups = %d, want 2", len(seeds))
	}
	all := map[int64]bool{}
	for id, ss := range seeds {
		if len(ss) != 1 {
			t.Errorf("group %s: %d distinct seeds among its continuations, want 1", id, len(ss))
		}
		if len(texts[id]) < 2 {
			t.Errorf("group %s: every continuation replied alike (%v): sampling seeds are shared", id, texts[id])
		}
		for k := range ss {
			all[k] = true
		}
	}
	if len(all) != 2 {
		t.Errorf("the two groups share a seed: %v", all)
	}
}
