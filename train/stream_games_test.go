package train_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestSeriesStream runs series training on the stream (staleness 1, two
// groups a step, so four series in flight), straight and stopped after
// step 3 and resumed by a new loop; in a third run one series' first game
// fails in every continuation. Every step is trained once from a batch of
// two whole groups; no game of a series is played into two batches; every
// game starts from the state its series carried (a game's continuations
// have played index+1 games); series roll over to new generations; and
// the series whose game failed stops, named in a warning, while the others
// go on.
func TestSeriesStream(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	const steps = 6
	type game struct {
		series string
		index  int32
		failed bool
		state  toygame.State
	}
	run := func(t *testing.T, dir dataset.RunDir, plan func(int, int64) ([]rollout.Series, error), log *zap.Logger, stops ...int) map[string][]game {
		if err := dir.Create(); err != nil {
			t.Fatal(err)
		}
		if err := train.SaveState(dir.StatePath(), train.State{Version: train.StateVersion, RunID: "t", Seed: 5, Nonce: "0badcafe"}); err != nil {
			t.Fatal(err)
		}
		ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go ft.run(ctx)
		for _, n := range stops {
			l := newLoopClient(t, dir, llmOpts(ts.URL), n, 1, seriesLoopOptions(t, dir, ts.URL, n), func(o *train.LoopOptions) {
				o.Stream, o.PromptsPerStep = true, 2
				o.Series.Plan = plan
				if log != nil {
					o.Logger = log
				}
			})
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for step := 1; step <= steps; step++ {
			if ft.consumed[step] != 1 {
				t.Errorf("step %d consumed %d times, want once", step, ft.consumed[step])
			}
		}
		groups := map[string][]game{}
		for step := 1; step <= steps; step++ {
			rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
			if err != nil {
				t.Fatal(err)
			}
			per := map[string]bool{}
			for _, r := range rs {
				per[r.GroupID] = true
				var st toygame.State
				if !r.Failed {
					if err := json.Unmarshal([]byte(r.Outcome), &st); err != nil {
						t.Fatalf("step %d %s: %v", step, r.RolloutID, err)
					}
				}
				groups[r.GroupID] = append(groups[r.GroupID], game{r.Series, r.GameIndex, r.Failed, st})
			}
			if len(per) != 2 {
				t.Errorf("step %d: %d groups, want 2", step, len(per))
			}
		}
		played := map[string]string{} // series/game → group
		for id, g := range groups {
			if len(g) != 3 {
				t.Errorf("group %s: %d continuations, want 3", id, len(g))
			}
			key := fmt.Sprintf("%s/%d", g[0].series, g[0].index)
			if was, ok := played[key]; ok {
				t.Errorf("game %s in two batches' groups: %s and %s", key, was, id)
			}
			played[key] = id
			for _, c := range g {
				if c.series != g[0].series || c.index != g[0].index {
					t.Errorf("group %s mixes games: %+v", id, g)
				}
				if !c.failed && c.state.Games != int(c.index)+1 {
					t.Errorf("group %s: continuation of game %d has played %d games, want %d: the series' state was not carried", id, c.index, c.state.Games, c.index+1)
				}
			}
		}
		return groups
	}
	gens := func(groups map[string][]game) map[string]bool {
		out := map[string]bool{}
		for _, g := range groups {
			out[g[0].series[:4]] = true
		}
		return out
	}
	t.Run("straight", func(t *testing.T) {
		if g := gens(run(t, dataset.RunDir(t.TempDir()), toyPlan, nil, steps)); len(g) < 2 {
			t.Errorf("series of generations %v: want the series to roll over to a new generation", g)
		}
	})
	t.Run("resumed", func(t *testing.T) {
		run(t, dataset.RunDir(t.TempDir()), toyPlan, nil, 3, steps)
	})
	t.Run("failed game", func(t *testing.T) {
		// Slot 1 of the first generation starts from a state the game
		// cannot read: its every continuation fails.
		var mu sync.Mutex
		var first int64
		plan := func(n int, seed int64) ([]rollout.Series, error) {
			mu.Lock()
			defer mu.Unlock()
			if first == 0 {
				first = seed
			}
			out, err := toyPlan(n, seed)
			if seed == first && len(out) > 1 {
				out[1].Init = []byte("{not json")
			}
			return out, err
		}
		core, logs := observer.New(zap.WarnLevel)
		groups := run(t, dataset.RunDir(t.TempDir()), plan, zap.New(core), steps)
		w := logs.FilterMessageSnippet("every continuation of a series game failed")
		if w.Len() != 1 || !strings.Contains(fmt.Sprint(w.All()[0].ContextMap()["series"]), "g000-toy") {
			t.Fatalf("warnings %v: want one naming the first generation's series that failed", logs.All())
		}
		stopped := fmt.Sprint(w.All()[0].ContextMap()["series"])
		further := false
		for _, g := range groups {
			if g[0].series == stopped && g[0].index > 0 {
				t.Errorf("series %s played game %d after it stopped", stopped, g[0].index)
			}
			if g[0].series != stopped && g[0].index > 0 {
				further = true
			}
		}
		if !further {
			t.Errorf("no other series went past its first game")
		}
	})
}

// TestLeagueStream runs league training on the stream (staleness 1),
// straight and stopped after step 3 and resumed: every group draws a
// league member for role B as it starts, from the snapshots of the policy
// it plays with or older; no rollout fails (an adapter is never unloaded
// while a group plays it); each step's league counts the draws of the
// groups its batch took and rates them; and the snapshots join as the
// policy moves on.
func TestLeagueStream(t *testing.T) {
	url := simURL(t)
	const steps = 6
	for _, tc := range []struct {
		stops   []int
		dynamic bool
	}{{[]int{steps}, false}, {[]int{3, steps}, false}, {[]int{steps}, true}} {
		stops := tc.stops
		t.Run(fmt.Sprint(stops, tc.dynamic), func(t *testing.T) {
			dir := dataset.RunDir(t.TempDir())
			fixNonce(t, dir)
			ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			for _, n := range stops {
				if err := newLoopClient(t, dir, llmOpts(url), n, 1, withLeague, func(o *train.LoopOptions) {
					o.Stream = true
					if tc.dynamic {
						// One group in three teaches: the batches take more.
						o.Judge = groupJudge{func(id string) bool { return id[len(id)-1]%3 == 0 }}
						o.Advantage = grpo.AdvantageOptions{Mode: grpo.ModeGroup}
						o.DynamicSampling, o.OversampleMax = true, 3
					}
				}).Run(ctx); err != nil {
					t.Fatal(err)
				}
			}
			nonce := mustState(t, dir).Nonce
			newest, sampled := 0, 0
			for step := 1; step <= steps; step++ {
				if ft.consumed[step] != 1 {
					t.Errorf("step %d consumed %d times, want once", step, ft.consumed[step])
				}
				rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
				if err != nil {
					t.Fatal(err)
				}
				st := readLeague(t, dir, step).Role("B")
				groups := map[string]bool{}
				for _, x := range rs {
					groups[x.GroupID] = true
					if x.Failed {
						t.Errorf("step %d: rollout %s failed: %s", step, x.RolloutID, x.Error)
					}
					b := x.Role("B")
					m := st.Member(b.Member)
					if m == nil || int(b.MemberVersion) != m.Version || b.Trained {
						t.Fatalf("step %d rollout %s role B = %+v: want a league member, untrained", step, x.RolloutID, b)
					}
					if m.Version > int(x.PolicyVersion) {
						t.Errorf("step %d: %s drew snapshot %d, newer than its policy %d", step, x.RolloutID, m.Version, x.PolicyVersion)
					}
					if m.Version > 0 && b.Model != fmt.Sprintf("p-%s-%06d", nonce, m.Version) {
						t.Errorf("step %d: snapshot %d played by %q", step, m.Version, b.Model)
					}
					newest = max(newest, m.Version)
				}
				drawn, total := 0, 0
				for _, m := range st.Members {
					drawn += m.StepDrawn
					total += m.Drawn
				}
				sampled += len(groups)
				if drawn != len(groups) || total != sampled || len(st.History) != step {
					t.Errorf("step %d: %d draws counted for %d groups, %d in all (want %d), %d history points", step, drawn, len(groups), total, sampled, len(st.History))
				}
				if len(groups) < 4 || (!tc.dynamic && len(groups) != 4) {
					t.Errorf("step %d: %d groups, want 4 (more with dynamic sampling)", step, len(groups))
				}
			}
			if newest < 2 {
				t.Errorf("the newest snapshot drawn is %d: the run's snapshots did not join the league", newest)
			}
			ms := readMetrics(t, dir)
			for _, k := range []string{"league/loads", "league/unloads", "league/members", "league/rating/B"} {
				if _, ok := ms[steps-1][k]; !ok {
					t.Errorf("metrics line of step %d lacks %s: %v", steps, k, ms[steps-1])
				}
			}
		})
	}
}

// TestSeriesStreamCrashPoints is the child of TestSeriesStreamSIGKILL.
func TestSeriesStreamCrashPoints(t *testing.T) {
	dir, url := os.Getenv("PARLEY_TEST_SERIES_DIR"), os.Getenv("PARLEY_TEST_CRASH_URL")
	if dir == "" {
		t.Skip("child of TestSeriesStreamSIGKILL")
	}
	ft := &fakeTrainer{dir: dataset.RunDir(dir), consumed: map[int]int{}, versions: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	l := newLoopClient(t, dataset.RunDir(dir), llmOpts(url), 5, 1, seriesLoopOptions(t, dataset.RunDir(dir), url, 5), func(o *train.LoopOptions) {
		o.Stream, o.PromptsPerStep = true, 2
	})
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSeriesStreamSIGKILL kills series training on the stream with
// SIGKILL with groups taken and no batch written, with groups just
// journaled, and between a batch and its journal line, then resumes: every
// step is trained once, no group is in two batches, no game of a series
// is played into two batches, and every game starts from the state its
// series carried.
func TestSeriesStreamSIGKILL(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	if err := train.SaveState(dir.StatePath(), train.State{Version: train.StateVersion, RunID: "t", Seed: 5, Nonce: "0badcafe"}); err != nil {
		t.Fatal(err)
	}
	kills := killAtPoints(t, "TestSeriesStreamCrashPoints", []string{"PARLEY_TEST_SERIES_DIR=" + dir.Root(), "PARLEY_TEST_CRASH_URL=" + url},
		"group-journaled:3", "stream-taken:2", "before-batch-journal:1", "group-journaled:1", "after-done:2")
	if kills < 3 {
		t.Fatalf("%d kills landed, want at least 3", kills)
	}
	checkGroupsOnce(t, dir, 5, 3)
	games := map[string]string{}
	for step := 1; step <= 5; step++ {
		err := dataset.ReadRollouts(dir.RolloutsPath(step), func(r dataset.Rollout) error {
			key := fmt.Sprintf("%s/%d", r.Series, r.GameIndex)
			if g, ok := games[key]; ok && g != r.GroupID {
				t.Errorf("game %s played into two groups trained: %s and %s", key, g, r.GroupID)
			}
			games[key] = r.GroupID
			if strings.HasPrefix(r.Series, "g1000") {
				t.Errorf("%s plays series %s, of a generation of its own: a resumed stream did not go on with the series the journal holds", r.RolloutID, r.Series)
			}
			var st toygame.State
			if err := json.Unmarshal([]byte(r.Outcome), &st); err != nil || st.Games != int(r.GameIndex)+1 {
				t.Errorf("%s: game %d of %s after %d games played (%v): the series' state was not carried", r.RolloutID, r.GameIndex, r.Series, st.Games, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills", kills)
}
