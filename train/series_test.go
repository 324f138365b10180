package train_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// toyPlan lays out n series per unit of three toy games; slot k of a
// generation starts from a total of 1000·k + the generation's seed mod 7,
// so a state says which series and generation it came from.
func toyPlan(n int, seed int64) ([]rollout.Series, error) {
	var out []rollout.Series
	for k := 0; k < n; k++ {
		init, _ := json.Marshal(toygame.State{Total: 1000*k + int(seed%7)})
		s := rollout.Series{ID: fmt.Sprintf("toy-%d-k%d", seed%1000, k), Init: init}
		for g := 0; g < 3; g++ {
			s.Games = append(s.Games, dataset.Prompt{ID: fmt.Sprintf("q%d", g), Category: dataset.CategoryOpenEnded, Task: fmt.Sprintf("Say something about idea %d.", g)})
		}
		out = append(out, s)
	}
	return out, nil
}

func seriesLoopOptions(t *testing.T, dir dataset.RunDir, url string, steps int) func(*train.LoopOptions) {
	return func(o *train.LoopOptions) {
		g, err := rollout.NewGame(toygame.Name, nil, rollout.Shared{})
		if err != nil {
			t.Fatal(err)
		}
		o.Steps = steps
		o.Rollout.Game = g
		o.Rollout.GroupSize = 3
		o.Series = &train.SeriesOptions{Slots: 2, Plan: toyPlan}
		j, _ := reward.NewRuleJudge(reward.RuleOptions{Kind: "length", TargetLength: 3})
		o.Judge = j
		o.Mask = "final"
		o.Advantage = grpo.AdvantageOptions{Mode: "group", KeepZeroVariance: true}
	}
}

// TestSeriesTraining runs six steps of series training over two slots of
// three-game toy series, once straight and once stopped after step 3 and
// resumed by a new loop: each step plays the next game of each slot's
// series from the state its previous step carried (continuation 0's),
// rolls over to a new generation after the third game, and the resumed run
// equals the straight one.
func TestSeriesTraining(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	run := func(dir dataset.RunDir, stops ...int) {
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
		for _, steps := range stops {
			l := newLoopClient(t, dir, llmOpts(ts.URL), steps, 0, seriesLoopOptions(t, dir, ts.URL, steps))
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	straight := dataset.RunDir(t.TempDir())
	run(straight, 6)
	resumed := dataset.RunDir(t.TempDir())
	run(resumed, 3, 6)

	type game struct {
		series string
		index  int32
		state  toygame.State
	}
	read := func(dir dataset.RunDir, step int) map[string][]game { // group → its continuations
		rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]game{}
		for _, r := range rs {
			var st toygame.State
			if err := json.Unmarshal([]byte(r.Outcome), &st); err != nil {
				t.Fatalf("step %d %s: %v", step, r.RolloutID, err)
			}
			out[r.GroupID] = append(out[r.GroupID], game{r.Series, r.GameIndex, st})
		}
		return out
	}
	var prev map[string][]game
	for step := 1; step <= 6; step++ {
		a, b := read(straight, step), read(resumed, step)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("step %d differs after a resume:\n%v\nwant\n%v", step, b, a)
		}
		if len(a) != 2 {
			t.Fatalf("step %d: %d groups, want 2 (one per slot)", step, len(a))
		}
		for slot := 0; slot < 2; slot++ {
			g := a[rollout.GroupID(step, slot)]
			if len(g) != 3 {
				t.Fatalf("step %d slot %d: %d continuations, want 3", step, slot, len(g))
			}
			wantIndex := int32((step - 1) % 3)
			for _, c := range g {
				if c.index != wantIndex || c.series != g[0].series || c.state.Games != int(wantIndex)+1 {
					t.Errorf("step %d slot %d: continuation %+v, want game %d of one series", step, slot, c, wantIndex)
				}
			}
			if wantIndex == 0 {
				// A series' first game starts from its plan's Init: 1000·slot + seed mod 7.
				if g[0].state.Total/1000 != slot {
					t.Errorf("step %d slot %d: total %d does not come from the slot's initial state", step, slot, g[0].state.Total)
				}
				if step > 1 && g[0].series == prev[rollout.GroupID(step-1, slot)][0].series {
					t.Errorf("step %d slot %d: series %s did not roll over to a new generation", step, slot, g[0].series)
				}
				continue
			}
			// The state carried is continuation 0's of the step before:
			// every continuation adds to exactly that total.
			carried := prev[rollout.GroupID(step-1, slot)][0].state
			for _, c := range g {
				if c.state.Total <= carried.Total || c.state.Total > carried.Total+8*2 {
					t.Errorf("step %d slot %d: total %d does not continue the carried %d", step, slot, c.state.Total, carried.Total)
				}
			}
		}
		prev = a
	}
}

func llmOpts(url string) llm.Options {
	return llm.Options{Endpoints: []string{url}, Retry: retry.Policy{BackoffBase: time.Millisecond}}
}
