package train_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// groupJudge scores a rollout by its group and index alone: the rollouts of
// the groups informative names get their index as score (a spread), the
// others all 1 (zero variance), so a test knows which groups teach.
type groupJudge struct {
	informative func(groupID string) bool
}

func (j groupJudge) Name() string { return "group-judge" }

func (j groupJudge) Judge(_ context.Context, r *dataset.Rollout) (reward.Result, error) {
	if j.informative(r.GroupID) {
		return reward.Result{Score: float64(r.Index)}, nil
	}
	return reward.Result{Score: 1}, nil
}

// TestLoopDynamicSampling: with train.dynamic_sampling the loop keeps
// playing groups until the batch holds prompts_per_step informative ones,
// trains exactly those, keeps every group played in the rollouts, counts
// it all, stops at the cap with a warning, and plays the same groups when
// run again (the synchronous mode's batches stay reproducible).
func TestLoopDynamicSampling(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	everyThird := func(id string) bool {
		var s, i int
		fmt.Sscanf(id, "s%06d-g%05d", &s, &i)
		return i%3 == 2
	}
	for _, tc := range []struct {
		name        string
		informative func(string) bool
		// wantSampled is the groups each step plays, wantTrained those
		// its batch trains.
		wantSampled, wantTrained int
		wantWarn                 bool
	}{
		// Round 1 plays 4 groups (1 informative: g2), round 2 the 3
		// missing at the cap's rate 1/3 (8 left: 8), g5, g8 and g11
		// informative: 12 played, 4 informative, 4 trained.
		{"one in three teaches", everyThird, 12, 4, false},
		{"all teach", func(string) bool { return true }, 4, 4, false},
		{"none teaches", func(string) bool { return false }, 12, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var batches [][]dataset.BatchRow
			for run := 0; run < 2; run++ {
				dir := dataset.RunDir(t.TempDir())
				fixNonce(t, dir)
				ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
				ctx, cancel := context.WithCancel(context.Background())
				go ft.run(ctx)
				core, logs := observer.New(zap.WarnLevel)
				l := newLoopClientURL(t, dir, ts.URL, 2, 0, func(o *train.LoopOptions) {
					o.Judge = groupJudge{tc.informative}
					o.Advantage = grpo.AdvantageOptions{Mode: grpo.ModeGroup}
					o.DynamicSampling, o.OversampleMax = true, 3
					o.Logger = zap.New(core)
				})
				if err := l.Run(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
				warned := logs.FilterMessageSnippet("train.oversample_max").Len()
				if (warned > 0) != tc.wantWarn {
					t.Errorf("run %d: %d warnings about the cap, want any: %v", run, warned, tc.wantWarn)
				}
				for i, m := range readMetrics(t, dir) {
					step := i + 1
					got := fmt.Sprint(m["groups_sampled"], m["groups_trained"], m["oversample_ratio"])
					want := fmt.Sprint(tc.wantSampled, tc.wantTrained, float64(tc.wantSampled)/4)
					if got != want {
						t.Errorf("step %d: groups_sampled, groups_trained, oversample_ratio = %s, want %s", step, got, want)
					}
					if v, _ := m["policy/inflight_mean"].(float64); !(v > 0) {
						t.Errorf("step %d: policy/inflight_mean %v, want the requests in flight measured", step, m["policy/inflight_mean"])
					}
					rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
					if err != nil {
						t.Fatal(err)
					}
					if len(rs) != tc.wantSampled*4 {
						t.Errorf("step %d: %d rollouts in the file, want every group played: %d", step, len(rs), tc.wantSampled*4)
					}
					rows, err := dataset.ReadBatch(dir.BatchPath(step))
					if err != nil {
						t.Fatal(err)
					}
					groups := map[string]bool{}
					for _, r := range rows {
						groups[r.GroupID] = true
						if !tc.informative(r.GroupID) {
							t.Errorf("step %d: batch row of %s, a group of equal rewards", step, r.GroupID)
						}
					}
					if len(groups) != tc.wantTrained {
						t.Errorf("step %d: batch trains %d groups, want %d", step, len(groups), tc.wantTrained)
					}
					if run == 0 {
						batches = append(batches, rows)
					} else if fmt.Sprint(rows) != fmt.Sprint(batches[i]) {
						t.Errorf("step %d: the batch of the second run differs from the first's", step)
					}
				}
			}
		})
	}
}

// TestDynamicSamplingSurplus: a round that finds more informative groups
// than the batch is missing trains only the first in group order; the
// others stay in the rollouts with no advantage.
func TestDynamicSamplingSurplus(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	// Round 1: g0..g3, only g0 teaches; round 2 plays the 3 missing at the
	// rate 1/4 (the cap's too): 12 groups g4..g15, all teach: g4..g6
	// trained, g7..g15 surplus.
	informative := func(id string) bool {
		return !slices.Contains([]string{"g00001", "g00002", "g00003"}, id[strings.Index(id, "-")+1:])
	}
	dir := dataset.RunDir(t.TempDir())
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	l := newLoopClientURL(t, dir, ts.URL, 1, 0, func(o *train.LoopOptions) {
		o.Judge = groupJudge{informative}
		o.Advantage = grpo.AdvantageOptions{Mode: grpo.ModeGroupMean}
		o.DynamicSampling, o.OversampleMax = true, 4
	})
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	m := readMetrics(t, dir)[0]
	if got := fmt.Sprint(m["groups_sampled"], m["groups_informative"], m["groups_trained"]); got != "16 13 4" {
		t.Errorf("groups sampled, informative, trained = %s, want 16 13 4", got)
	}
	rows, err := dataset.ReadBatch(dir.BatchPath(1))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		if !slices.Contains(got, r.GroupID) {
			got = append(got, r.GroupID)
		}
	}
	slices.Sort(got)
	if want := "[s000001-g00000 s000001-g00004 s000001-g00005 s000001-g00006]"; fmt.Sprint(got) != want {
		t.Errorf("batch groups %v, want %s", got, want)
	}
	rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.GroupID == "s000001-g00015" && r.Roles[0].Advantage != 0 {
			t.Errorf("surplus rollout %s has advantage %v, want 0", r.RolloutID, r.Roles[0].Advantage)
		}
	}
}

// newLoopClientURL is newLoopClient on the server at url.
func newLoopClientURL(t *testing.T, dir dataset.RunDir, url string, steps, staleness int, edit ...func(*train.LoopOptions)) *train.Loop {
	t.Helper()
	return newLoopClient(t, dir, llm.Options{Endpoints: []string{url}, Retry: retry.Policy{BackoffBase: time.Millisecond}}, steps, staleness, edit...)
}
