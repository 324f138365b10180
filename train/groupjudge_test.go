package train_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// TestLoopGroupJudge trains 2 steps with the CA judge in group mode on
// serve-sim, step by step and streaming: each group is judged in one
// request, re-scored reversed (position_check 1), and every step's
// metrics report the scores checked and the share that moved; a judge
// biased to the solution shown first moves some, an unbiased one none.
func TestLoopGroupJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		fault  string
		moved  bool
	}{
		{"steps-unbiased", false, "", false},
		{"steps-first-bias", false, sim.GroupFaultFirstBias, true},
		{"stream-first-bias", true, sim.GroupFaultFirstBias, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := sim.New(sim.Options{JudgeGroupFault: tc.fault})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			c, err := chat.New(chat.Options{BaseURL: ts.URL + "/v1", Model: sim.DefaultJudgeModel, Concurrency: 4,
				Retry: retry.Policy{MaxRetries: 1, BackoffBase: time.Millisecond}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dir := dataset.RunDir(t.TempDir())
			ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			l := newLoopClient(t, dir, llmOpts(ts.URL), 2, 1, func(o *train.LoopOptions) {
				o.Judge = reward.NewCAGroupJudge(c, reward.GroupOptions{Seed: 5, PositionCheck: 1})
				o.Stream = tc.stream
				o.ServingSampleEvery = 5 * time.Millisecond
			})
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
			moved := false
			for i, m := range readMetrics(t, dir) {
				checked, _ := m["judge_position_checked"].(float64)
				share, ok := m["judge_position_moved"].(float64)
				if checked < 16 || !ok || share < 0 || share > 1 {
					t.Errorf("step %d: judge_position_checked %v, judge_position_moved %v: want every score of 4 groups of 4 checked", i+1, m["judge_position_checked"], m["judge_position_moved"])
				}
				moved = moved || share > 0
			}
			if moved != tc.moved {
				t.Errorf("some score moved: %v, want %v", moved, tc.moved)
			}
			for step := 1; step <= 2; step++ {
				rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					if r.Judged && !strings.HasPrefix(r.JudgeRationale, "[group: S") {
						t.Errorf("step %d %s: rationale %q has no group order", step, r.RolloutID, r.JudgeRationale)
					}
				}
				if len(rs) == 0 {
					t.Errorf("step %d: no rollouts", step)
				}
			}
		})
	}
}
