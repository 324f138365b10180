package train_test

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// TestLoopMaxOffPolicySteps runs staleness 2 with a trainer that trains a
// step only once the batch two steps on is written, so that every step
// from 3 samples with the oldest policy the staleness allows (step-3):
// with train.max_off_policy_steps 1 those rollouts are older than the
// batch's policy (step-1) less 1, and each such step drops them all,
// counted, its batch empty; steps 1 and 2 keep theirs. Without the key
// nothing is dropped and no count is written.
func TestLoopMaxOffPolicySteps(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	const steps = 6
	wantPV := []int{0, 0, 0, 1, 2, 3}
	for _, m := range []int{0, 1} {
		dir := dataset.RunDir(t.TempDir())
		ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}, gate: func(step int) {
			for step+2 <= steps {
				if _, err := os.Stat(dir.ReadyPath(step + 2)); err == nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}}
		ctx, cancel := context.WithCancel(context.Background())
		go ft.run(ctx)
		l := newLoopClient(t, dir, llm.Options{Endpoints: []string{ts.URL}, Retry: retry.Policy{BackoffBase: time.Millisecond}}, steps, 2,
			func(o *train.LoopOptions) { o.MaxOffPolicySteps = m })
		err := l.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		ms := readMetrics(t, dir)
		if len(ms) != steps {
			t.Fatalf("m=%d: %d metrics lines, want %d", m, len(ms), steps)
		}
		for i, line := range ms {
			step := i + 1
			if pv := int(line["policy_version"].(float64)); pv != wantPV[i] {
				t.Errorf("m=%d step %d: policy_version %d, want %d", m, step, pv, wantPV[i])
			}
			dropped, has := line["rollouts_dropped_off_policy"].(float64)
			want := 0.0
			if m > 0 && wantPV[i] < step-1-m {
				want = line["rollouts"].(float64)
			}
			if has != (m > 0) || dropped != want || want == 0 && line["batch_rows"].(float64) == 0 || want > 0 && line["batch_rows"].(float64) != 0 {
				t.Errorf("m=%d step %d: rollouts_dropped_off_policy %v (present %v) of %v, batch_rows %v; want %v dropped",
					m, step, dropped, has, line["rollouts"], line["batch_rows"], want)
			}
		}
	}
}
