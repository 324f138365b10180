package train_test

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// TestLoopStream runs the streaming loop at staleness 1 and 2, with and
// without dynamic sampling: every step is trained once, in order, from a
// complete batch of prompts_per_step groups whose policies the bound
// allows; each group plays throughout with the adapter of its own policy
// version, which its rows record; and every group of the rollouts file is
// whole.
func TestLoopStream(t *testing.T) {
	agents, _ := deliberation.NewSim(nil) // the game's agents, as serve-sim's: some agree
	srv, _ := sim.New(sim.Options{Games: []sim.Answerer{agents}})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	// A second endpoint of the same server: staleness 2 samples on both.
	ts2 := httptest.NewServer(srv.Handler())
	defer ts2.Close()
	const steps = 6
	for _, tc := range []struct {
		staleness int
		dynamic   bool
		// rare: one group in ten teaches, so every step takes the cap's
		// 12 groups (the stream must keep admitting groups to a step
		// still being filled).
		rare bool
	}{{1, false, false}, {2, false, false}, {1, true, false}, {1, true, true}} {
		t.Run(fmt.Sprintf("staleness%d-dynamic%v-rare%v", tc.staleness, tc.dynamic, tc.rare), func(t *testing.T) {
			dir := dataset.RunDir(t.TempDir())
			ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			copts := llmOpts(ts.URL)
			if tc.staleness == 2 {
				copts.Endpoints = append(copts.Endpoints, ts2.URL)
			}
			l := newLoopClient(t, dir, copts, steps, tc.staleness, func(o *train.LoopOptions) {
				o.Stream = true
				o.ServingSampleEvery = 5 * time.Millisecond
				if tc.dynamic {
					o.Judge = groupJudge{func(id string) bool { return id[len(id)-1]%3 == 0 }}
					if tc.rare {
						o.Judge = groupJudge{func(id string) bool { return id[len(id)-1] == '7' }}
					}
					o.Advantage = grpo.AdvantageOptions{Mode: grpo.ModeGroup}
					o.DynamicSampling, o.OversampleMax = true, 3
				}
			})
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
			st := l.State()
			ms := readMetrics(t, dir)
			if len(ms) != steps {
				t.Fatalf("%d metrics lines, want %d", len(ms), steps)
			}
			for i, m := range ms {
				step := i + 1
				if m["step"] != float64(step) || ft.consumed[step] != 1 {
					t.Errorf("line %d: step %v consumed %d times", i, m["step"], ft.consumed[step])
				}
				// The servers' requests running are read through the run: a
				// step's line has readings unless the step took under 5 ms.
				if n, ok := m["policy/server_running_samples"].(float64); ok && (n < 1 || m["policy/server_running_min"].(float64) > m["policy/server_running_mean"].(float64)) {
					t.Errorf("step %d: %v readings of the requests running, min %v, mean %v", step, n, m["policy/server_running_min"], m["policy/server_running_mean"])
				}
				// Several endpoints: each one's occupancy, whose mean is
				// the step's.
				if n := len(copts.Endpoints); n > 1 {
					var sum float64
					for e := range n {
						v, ok := m[fmt.Sprintf("policy/inflight_mean/e%d", e)].(float64)
						_, ok2 := m[fmt.Sprintf("policy/at_target_share/e%d", e)].(float64)
						if !ok || !ok2 || !(v > 0) {
							t.Errorf("step %d: endpoint %d's occupancy %v, %v: want both measured", step, e, m[fmt.Sprintf("policy/inflight_mean/e%d", e)], m[fmt.Sprintf("policy/at_target_share/e%d", e)])
						}
						sum += v
					}
					if mean := m["policy/inflight_mean"].(float64); math.Abs(sum/float64(n)-mean) > 1e-9 {
						t.Errorf("step %d: endpoints' in-flight means average %v, the step's is %v", step, sum/float64(n), mean)
					}
				} else if _, ok := m["policy/inflight_mean/e0"]; ok {
					t.Errorf("step %d: one endpoint, and a per-endpoint key", step)
				}
				if tc.rare {
					if m["groups_sampled"] != float64(12) || m["groups_trained"] != m["groups_informative"] {
						t.Errorf("step %d: %v groups sampled, %v informative, %v trained; want the cap's 12, every informative one trained", step, m["groups_sampled"], m["groups_informative"], m["groups_trained"])
					}
				} else if m["groups_trained"] != float64(4) {
					t.Errorf("step %d: groups_trained %v, want 4", step, m["groups_trained"])
				}
				rows, err := dataset.ReadBatch(dir.BatchPath(step))
				if err != nil {
					t.Fatal(err)
				}
				groups := map[string]bool{}
				for _, r := range rows {
					groups[r.GroupID] = true
					if pv := int(r.PolicyVersion); pv < step-1-tc.staleness || pv > step-1 {
						t.Errorf("step %d: row of %s sampled by policy %d, outside [%d, %d]", step, r.GroupID, pv, step-1-tc.staleness, step-1)
					}
				}
				if want := int(m["groups_trained"].(float64)); len(groups) != want {
					t.Errorf("step %d: batch of %d groups, want %d", step, len(groups), want)
				}
				rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
				if err != nil {
					t.Fatal(err)
				}
				per := map[string]int{}
				for _, r := range rs {
					per[r.GroupID]++
					want := sim.DefaultModel
					if r.PolicyVersion > 0 {
						want = fmt.Sprintf("p-%s-%06d", st.Nonce, r.PolicyVersion)
					}
					for _, ro := range r.Roles {
						if ro.Trained && ro.Model != want {
							t.Errorf("step %d: %s role %s played by %s, want its policy %d's %s", step, r.RolloutID, ro.Role, ro.Model, r.PolicyVersion, want)
						}
					}
					if int(r.Step) != step {
						t.Errorf("rollout %s of step %d's file records step %d", r.RolloutID, step, r.Step)
					}
				}
				for g, n := range per {
					if n != 4 || !strings.HasPrefix(g, "s") {
						t.Errorf("step %d: group %s has %d rollouts, want 4", step, g, n)
					}
				}
			}
			read := 0
			for _, m := range ms {
				if _, ok := m["policy/server_running_mean"]; ok {
					read++
				}
			}
			if read == 0 {
				t.Errorf("no step line has policy/server_running_mean: the servers' requests running were never read")
			}
			if st.Step != steps {
				t.Errorf("state step %d, want %d", st.Step, steps)
			}
		})
	}
}
