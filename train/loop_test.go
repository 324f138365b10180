package train_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
)

// fakeTrainer is a stand-in for the PyTorch trainer in file mode: it takes
// the batches in order, counts how often it consumed each, and writes the
// checkpoint and DONE, skipping steps already DONE as the real one does.
type fakeTrainer struct {
	dir      dataset.RunDir
	mu       sync.Mutex
	consumed map[int]int
	versions map[int]int
	// log, if set, gets a line "step N" per batch consumed, across
	// processes.
	log string
	// gate, if set, is called before a step is trained.
	gate func(step int)
	// full, if set, writes each step's full weights (fullWeights) instead
	// of an adapter.
	full func(dir string, step int)
	// strict refuses a step whose .ready is there but whose batch does not
	// verify (REFUSED) and stops, as parley_trainer does (it exits for
	// good); otherwise such a batch is polled again.
	strict bool
}

func (f *fakeTrainer) run(ctx context.Context) {
	step := 1
	for ctx.Err() == nil {
		if _, ok, _ := handshake.ReadDone(f.dir.CheckpointDir(step)); ok {
			step++
			continue
		}
		ready, err := dataset.VerifyBatch(f.dir.BatchPath(step), step)
		if err != nil {
			if _, serr := os.Stat(f.dir.ReadyPath(step)); serr == nil && f.strict {
				b, _ := json.Marshal(handshake.Refused{Step: step, Reason: err.Error()})
				_ = os.MkdirAll(f.dir.CheckpointDir(step), 0o755)
				_ = os.WriteFile(filepath.Join(f.dir.CheckpointDir(step), handshake.RefusedFile), b, 0o644)
				return
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if f.gate != nil {
			f.gate(step)
		}
		f.mu.Lock()
		f.consumed[step]++
		f.versions[step] = ready.PolicyVersion
		f.mu.Unlock()

		ck := f.dir.CheckpointDir(step)
		_ = os.MkdirAll(ck, 0o755)
		if f.full != nil {
			f.full(ck, step)
		} else {
			_ = os.WriteFile(filepath.Join(ck, "adapter_config.json"), []byte("{}"), 0o644)
			_ = os.WriteFile(filepath.Join(ck, "adapter_model.safetensors"), []byte("weights"), 0o644)
		}
		_ = handshake.WriteDone(ck, handshake.Done{Step: step, Metrics: map[string]float64{"loss": float64(step)}})
		if f.log != "" {
			// A step is trained once it has its DONE (a trainer killed
			// before DONE trains the step again, as it should).
			lf, _ := os.OpenFile(f.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			fmt.Fprintf(lf, "step %d\n", step)
			lf.Sync()
			lf.Close()
		}
		step++
	}
}

func newLoop(t *testing.T, dir dataset.RunDir, url string, steps, staleness int) *train.Loop {
	t.Helper()
	return newLoopClient(t, dir, llm.Options{Endpoints: []string{url}, Retry: retry.Policy{BackoffBase: time.Millisecond}}, steps, staleness)
}

func newLoopClient(t *testing.T, dir dataset.RunDir, copts llm.Options, steps, staleness int, edit ...func(*train.LoopOptions)) *train.Loop {
	t.Helper()
	client, err := llm.New(copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	opts := loopOptions(t, dir, client, steps, staleness)
	for _, e := range edit {
		e(&opts)
	}
	l, err := train.NewLoop(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// loopOptions are the test loop's options over client.
func loopOptions(t testing.TB, dir dataset.RunDir, client *llm.Client, steps, staleness int) train.LoopOptions {
	t.Helper()
	judge, err := reward.NewRuleJudge(reward.RuleOptions{Kind: "keywords", Keywords: []string{"together", "both", "shared", "agency"}})
	if err != nil {
		t.Fatal(err)
	}
	all, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	prompts := dataset.SelectSplit(all, dataset.SplitTrain)
	opts := train.LoopOptions{
		Dir: dir, RunID: "t", Seed: 5, Steps: steps, MaxStaleness: staleness,
		Prompts: prompts, PromptsPerStep: 4,
		Rollout: rollout.RunnerOptions{
			Game:   deliberation.New(deliberation.Options{MaxRounds: 3, TurnTokens: 48, FinalTokens: 64}),
			Policy: client, Model: sim.DefaultModel, Sampling: llm.Sampling{MaxTokens: 48, Temperature: 1},
			GroupSize: 4, Concurrency: 16,
		},
		Judge: judge, JudgeConcurrency: 4,
		Advantage: grpo.AdvantageOptions{Mode: "group", KeepZeroVariance: true}, Mask: "dialogue",
		Adapters: client, AdapterPrefix: "p", DonePoll: 2 * time.Millisecond, TrainerTimeout: time.Minute,
	}
	return opts
}

func readMetrics(t *testing.T, dir dataset.RunDir) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(dir.MetricsPath())
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLoopStaleness(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, tc := range []struct {
		staleness int
		// policy version that sampled each step 1..5; with staleness 2
		// the newest trained one, between step-3 and step-2
		want []int
	}{
		{0, []int{0, 1, 2, 3, 4}},
		{1, []int{0, 0, 1, 2, 3}},
		{2, nil},
	} {
		t.Run(fmt.Sprint("staleness", tc.staleness), func(t *testing.T) {
			dir := dataset.RunDir(t.TempDir())
			ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			if err := newLoop(t, dir, ts.URL, 5, tc.staleness).Run(ctx); err != nil {
				t.Fatal(err)
			}
			ms := readMetrics(t, dir)
			if len(ms) != 5 {
				t.Fatalf("%d metrics lines, want 5", len(ms))
			}
			for i, m := range ms {
				pv := int(m["policy_version"].(float64))
				if tc.want == nil {
					lo, hi := max(i-tc.staleness, 0), max(i-1, 0)
					if pv < lo || pv > hi || ft.versions[i+1] != pv {
						t.Errorf("line %d: policy_version %v (trainer saw %d), want %d to %d", i, pv, ft.versions[i+1], lo, hi)
					}
				} else if pv != tc.want[i] {
					t.Errorf("line %d: policy_version %v, want %d", i, pv, tc.want[i])
				}
				if int(m["step"].(float64)) != i+1 {
					t.Errorf("line %d: step %v, want %d", i, m["step"], i+1)
				}
				if m["trainer/loss"] != float64(i+1) {
					t.Errorf("line %d: trainer/loss = %v", i, m["trainer/loss"])
				}
			}
			for s := 1; s <= 5; s++ {
				if ft.consumed[s] != 1 || (tc.want != nil && ft.versions[s] != tc.want[s-1]) {
					t.Errorf("step %d consumed %d times with policy %d", s, ft.consumed[s], ft.versions[s])
				}
			}
			st, _, _ := train.LoadState(dir.StatePath())
			if st.Step != 5 || st.Adapter != "p-"+st.Nonce+"-000005" || len(st.Nonce) != 8 {
				t.Errorf("state = step %d adapter %q", st.Step, st.Adapter)
			}
		})
	}
}

// TestLoopResume interrupts the loop at many points and resumes it: the
// run ends with every step once, in order, each batch consumed once, and
// the same batches as an uninterrupted run.
func TestLoopResume(t *testing.T) {
	srv, _ := sim.New(sim.Options{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	// Both runs get the same adapter nonce: the simulator's replies depend
	// on the adapter's name.
	fixNonce := func(dir dataset.RunDir) {
		if err := dir.Create(); err != nil {
			t.Fatal(err)
		}
		if err := train.SaveState(dir.StatePath(), train.State{Version: train.StateVersion, RunID: "t", Seed: 5, Nonce: "0badcafe"}); err != nil {
			t.Fatal(err)
		}
	}
	ref := dataset.RunDir(t.TempDir())
	fixNonce(ref)
	{
		ft := &fakeTrainer{dir: ref, consumed: map[int]int{}, versions: map[int]int{}}
		ctx, cancel := context.WithCancel(context.Background())
		go ft.run(ctx)
		if err := newLoop(t, ref, ts.URL, 6, 1).Run(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}

	dir := dataset.RunDir(t.TempDir())
	fixNonce(dir)
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
	tctx, tcancel := context.WithCancel(context.Background())
	defer tcancel()
	go ft.run(tctx)
	interruptions := 0
	for attempt := 0; attempt < 50; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5+attempt*7)*time.Millisecond)
		err := newLoop(t, dir, ts.URL, 6, 1).Run(ctx)
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "context") {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		interruptions++
	}
	if interruptions == 0 {
		t.Fatal("the loop was never interrupted; the test proves nothing")
	}
	ms := readMetrics(t, dir)
	if len(ms) != 6 {
		t.Fatalf("%d metrics lines after %d interruptions, want 6", len(ms), interruptions)
	}
	for i, m := range ms {
		if int(m["step"].(float64)) != i+1 {
			t.Errorf("metrics line %d is step %v", i, m["step"])
		}
	}
	for s := 1; s <= 6; s++ {
		if ft.consumed[s] != 1 {
			t.Errorf("step %d consumed %d times", s, ft.consumed[s])
		}
		a, err1 := dataset.ReadBatch(ref.BatchPath(s))
		b, err2 := dataset.ReadBatch(dir.BatchPath(s))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("step %d batch differs from the uninterrupted run's", s)
		}
	}
	t.Logf("%d interruptions", interruptions)
}

// TestLoopFailsOnFailedRollouts stops the run, naming the cause, when most
// rollouts of a step fail, instead of training on what is left.
func TestLoopFailsOnFailedRollouts(t *testing.T) {
	srv, _ := sim.New(sim.Options{ErrorRate: 1})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	dir := dataset.RunDir(t.TempDir())
	l := newLoopClient(t, dir, llm.Options{Endpoints: []string{ts.URL}, Retry: retry.Policy{MaxRetries: -1}}, 2, 0)
	err := l.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "max_failed_fraction") || !strings.Contains(err.Error(), "first error") {
		t.Fatalf("Run with a failing server = %v, want the failed-fraction error", err)
	}
	if _, err := os.Stat(dir.ReadyPath(1)); err == nil {
		t.Errorf("a batch was written for a step whose rollouts failed")
	}
}

func TestNewLoopRefusesEvalRows(t *testing.T) {
	client, err := llm.New(llm.Options{Endpoints: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	opts := loopOptions(t, dataset.RunDir(t.TempDir()), client, 1, 0)
	opts.Prompts = append(opts.Prompts[:1:1], dataset.Prompt{ID: "e", Split: dataset.SplitEval})
	_, err = train.NewLoop(opts)
	if err == nil || !strings.Contains(err.Error(), "1 row is in split eval (ids e)") {
		t.Errorf("NewLoop(an eval row) = %v, want a refusal naming it", err)
	}
}

// TestRescoreProgress: Rescore starts one judging bar through Progress
// counting every rollout of the file, ticks it once per rollout and ends
// it, not failed, before it returns.
func TestRescoreProgress(t *testing.T) {
	run := dataset.RunDir(t.TempDir())
	if _, err := trained(t, run, simURL(t), 1, 1); err != nil {
		t.Fatal(err)
	}
	rs, err := dataset.ReadAllRollouts(run.RolloutsPath(1))
	if err != nil {
		t.Fatal(err)
	}
	var (
		label            string
		total, ticks     int
		ends             []bool
		ticksBeforeEnded int
	)
	judge, err := reward.NewRuleJudge(reward.RuleOptions{Kind: "agreement"})
	if err != nil {
		t.Fatal(err)
	}
	out := dataset.RunDir(t.TempDir())
	_, err = train.Rescore(context.Background(), train.RescoreOptions{
		In: run.RolloutsPath(1), Out: out, Step: -1, PolicyVersion: -1, Judge: judge,
		Score: train.ScoreOptions{Advantage: grpo.AdvantageOptions{Mode: "group", KeepZeroVariance: true}, Mask: "dialogue", JudgeConcurrency: 4},
		Progress: func(l string, n int) (func(), func(bool)) {
			label, total = l, n
			var mu sync.Mutex
			return func() { mu.Lock(); ticks++; mu.Unlock() },
				func(failed bool) { ends = append(ends, failed); ticksBeforeEnded = ticks }
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if label != "judging" || total != len(rs) || ticksBeforeEnded != len(rs) || len(ends) != 1 || ends[0] {
		t.Errorf("bar %q of %d, %d ticks before its end, ends %v; want judging of %d, %d ticks, one end not failed",
			label, total, ticksBeforeEnded, ends, len(rs), len(rs))
	}
}
