package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// adapterRecorder is an adapter loader that records what it was asked to
// load, and fails for paths that do not exist, as vLLM does (404).
type adapterRecorder struct {
	mu     sync.Mutex
	loaded map[string]string // name → path
}

func (a *adapterRecorder) LoadLoRA(_ context.Context, name, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %s", llm.ErrAdapterNotFound, path)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded == nil {
		a.loaded = map[string]string{}
	}
	a.loaded[name] = path
	return nil
}

func (a *adapterRecorder) UnloadLoRA(context.Context, string) error { return nil }

// trained runs the loop to steps with the fake trainer and returns the
// trainer's counts.
func trained(t *testing.T, dir dataset.RunDir, url string, steps, staleness int, edit ...func(*train.LoopOptions)) (*fakeTrainer, error) {
	t.Helper()
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	err := newLoopClient(t, dir, llm.Options{Endpoints: []string{url}}, steps, staleness, edit...).Run(ctx)
	return ft, err
}

func simURL(t *testing.T) string {
	t.Helper()
	srv, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts.URL
}

func setStateStep(t *testing.T, dir dataset.RunDir, step int) {
	t.Helper()
	st, _, err := train.LoadState(dir.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	st.Step, st.PolicyVersion = step, step
	st.Adapter = fmt.Sprintf("p-%s-%06d", st.Nonce, step)
	if step == 0 {
		st.Adapter = ""
	}
	if err := train.SaveState(dir.StatePath(), st); err != nil {
		t.Fatal(err)
	}
}

// TestDoneStepIsFinal (issue 13, item 1): parley stops after the trainer
// wrote DONE for step 2, whose batch is then damaged. The resumed run never
// samples step 2 again: it warns, goes on with step 2's adapter, records
// step 2 once and trains step 3.
func TestDoneStepIsFinal(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	if _, err := trained(t, dir, url, 2, 0); err != nil {
		t.Fatal(err)
	}
	// Stopped after DONE 2, before its metrics line and state: undo them.
	setStateStep(t, dir, 1)
	b, _ := os.ReadFile(dir.MetricsPath())
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(dir.MetricsPath(), []byte(lines[0]), 0o644)
	damaged := []byte("not a parquet file any more")
	os.WriteFile(dir.BatchPath(2), damaged, 0o644)
	rolloutsBefore, _ := os.Stat(dir.RolloutsPath(2))

	core, logs := observer.New(zap.WarnLevel)
	ft, err := trained(t, dir, url, 3, 0, func(o *train.LoopOptions) { o.Logger = zap.New(core) })
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dir.BatchPath(2)); !bytes.Equal(got, damaged) {
		t.Error("step 2's batch was written again")
	}
	if after, _ := os.Stat(dir.RolloutsPath(2)); !after.ModTime().Equal(rolloutsBefore.ModTime()) {
		t.Error("step 2 was sampled again")
	}
	if logs.FilterMessageSnippet("no longer verifies").Len() != 1 {
		t.Errorf("warnings = %v, want one saying step 2's batch no longer verifies", logs.All())
	}
	if ft.consumed[2] != 0 || ft.consumed[3] != 1 {
		t.Errorf("resumed trainer consumed %v, want only step 3", ft.consumed)
	}
	ms := readMetrics(t, dir)
	if len(ms) != 3 || ms[1]["step"] != float64(2) {
		t.Errorf("metrics lines %v, want steps 1, 2, 3 once each", ms)
	}
}

// TestDoneWithoutAdapter (item 2): DONE without the adapter's files stops
// the run naming the step, the missing file and what to remove.
func TestDoneWithoutAdapter(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	if _, err := trained(t, dir, url, 1, 0); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir.CheckpointDir(1), "adapter_model.safetensors"))
	setStateStep(t, dir, 0)
	_, err := trained(t, dir, url, 2, 0)
	if err == nil {
		t.Fatal("Run with DONE but no adapter weights = nil error")
	}
	for _, want := range []string{"step 1", "adapter_model.safetensors or adapter_model.bin", "remove " + dir.CheckpointDir(1)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestDoneAdapterPath (item 3): DONE's adapter_path is honoured (a folder
// inside the checkpoint directory) and refused outside it.
func TestDoneAdapterPath(t *testing.T) {
	url := simURL(t)
	for _, tc := range []struct {
		name, path, wantErr string
	}{
		{"subfolder", "adapter", ""},
		{"outside", "../../elsewhere", "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataset.RunDir(t.TempDir())
			ck := dir.CheckpointDir(1)
			sub := filepath.Join(ck, "adapter")
			os.MkdirAll(sub, 0o755)
			os.WriteFile(filepath.Join(sub, "adapter_config.json"), []byte("{}"), 0o644)
			os.WriteFile(filepath.Join(sub, "adapter_model.safetensors"), []byte("w"), 0o644)
			if err := handshake.WriteDone(ck, handshake.Done{Step: 1, AdapterPath: tc.path}); err != nil {
				t.Fatal(err)
			}
			loader := &adapterRecorder{}
			_, err := trained(t, dir, url, 1, 0, func(o *train.LoopOptions) { o.Adapters = loader })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(sub)
			for name, p := range loader.loaded {
				if p != abs {
					t.Errorf("adapter %s loaded from %s, want DONE's adapter_path %s", name, p, abs)
				}
			}
			if len(loader.loaded) != 1 {
				t.Errorf("loaded %v, want the one adapter", loader.loaded)
			}
		})
	}
}

// TestPendingBatchCorrupt (item 7): a pending batch (no DONE) whose .ready
// does not match is sampled again, and the log says why; a trainer's
// REFUSED marker stops the run with its reason.
func TestPendingBatchCorrupt(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	pendingCorrupt(t, dir, url)
	core, logs := observer.New(zap.WarnLevel)
	ft, err := trained(t, dir, url, 1, 0, func(o *train.LoopOptions) { o.Logger = zap.New(core) })
	if err != nil {
		t.Fatal(err)
	}
	if logs.FilterMessageSnippet("does not verify against its .ready; sampling it again").Len() != 1 {
		t.Errorf("warnings = %v, want one saying why step 1 is sampled again", logs.All())
	}
	if _, err := dataset.VerifyBatch(dir.BatchPath(1), 1); err != nil || ft.consumed[1] != 1 {
		t.Errorf("after resampling: verify %v, consumed %d; want a good batch trained once", err, ft.consumed[1])
	}

	// The trainer refuses step 2's batch.
	dir2 := dataset.RunDir(t.TempDir())
	ck := dir2.CheckpointDir(1)
	os.MkdirAll(ck, 0o755)
	os.WriteFile(filepath.Join(ck, handshake.RefusedFile), []byte(`{"step":1,"reason":"schema_version 9, want 1 to 2"}`), 0o644)
	l := newLoopClient(t, dir2, llm.Options{Endpoints: []string{url}}, 1, 0)
	err = l.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the trainer refused the batch") || !strings.Contains(err.Error(), "schema_version 9") {
		t.Errorf("Run with REFUSED = %v, want the trainer's reason", err)
	}
}

// pendingCorrupt leaves in dir a run whose step 1's batch is written,
// not trained, and whose .ready no longer matches it.
func pendingCorrupt(t *testing.T, dir dataset.RunDir, url string) {
	t.Helper()
	if _, err := trained(t, dir, url, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir.CheckpointDir(1)); err != nil {
		t.Fatal(err)
	}
	setStateStep(t, dir, 0)
	var ready map[string]any
	b, _ := os.ReadFile(dir.ReadyPath(1))
	json.Unmarshal(b, &ready)
	ready["sha256"] = strings.Repeat("0", 64)
	b, _ = json.Marshal(ready)
	os.WriteFile(dir.ReadyPath(1), b, 0o644)
	os.WriteFile(dir.MetricsPath(), nil, 0o644)
}

// TestSIGKILLWhileResampling (issue 28, item 9): a pending batch that no
// longer verifies loses its .ready before it is sampled again. Killed
// while the step is sampled again (its rollouts written, its batch not),
// the run shows no trainer a marker of the step; the resumed run, under a
// trainer that refuses a batch its marker does not match and stops (as
// parley_trainer does), trains every step once.
func TestSIGKILLWhileResampling(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	pendingCorrupt(t, dir, url)
	env := []string{"PARLEY_TEST_CRASH_DIR=" + dir.Root(), "PARLEY_TEST_CRASH_URL=" + url, "PARLEY_TEST_CRASH_STALENESS=0"}
	if !runChild(t, "TestCrashPoints", env, "before-batch:1") {
		t.Fatal("the run was not killed while it sampled step 1 again")
	}
	if _, err := os.Stat(dir.ReadyPath(1)); !os.IsNotExist(err) {
		t.Errorf("killed while step 1 was sampled again, its old marker %s is still there (%v): a trainer takes the old batch", dir.ReadyPath(1), err)
	}
	runChild(t, "TestCrashPoints", append(env, "PARLEY_TEST_CRASH_STRICT=1"), "")
	b, _ := os.ReadFile(filepath.Join(dir.Root(), "consumed.log"))
	for s := 1; s <= 5; s++ {
		if n := strings.Count(string(b), fmt.Sprintf("step %d\n", s)); n != 1 {
			t.Errorf("step %d trained %d times, want once", s, n)
		}
	}
}

// TestCrashPoints is the child process of TestSIGKILLAtCrashPoints.
func TestCrashPoints(t *testing.T) {
	dir, url := os.Getenv("PARLEY_TEST_CRASH_DIR"), os.Getenv("PARLEY_TEST_CRASH_URL")
	if dir == "" {
		t.Skip("child of TestSIGKILLAtCrashPoints")
	}
	var staleness int
	fmt.Sscan(os.Getenv("PARLEY_TEST_CRASH_STALENESS"), &staleness)
	ft := &fakeTrainer{dir: dataset.RunDir(dir), consumed: map[int]int{}, versions: map[int]int{}, log: filepath.Join(dir, "consumed.log"),
		strict: os.Getenv("PARLEY_TEST_CRASH_STRICT") == "1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	stream := os.Getenv("PARLEY_TEST_CRASH_STREAM") != ""
	if err := newLoopClientURL(t, dataset.RunDir(dir), url, 5, staleness, func(o *train.LoopOptions) { o.Stream = stream }).Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSIGKILLAtCrashPoints kills the loop with SIGKILL between the
// trainer's DONE and the state write, right after the metrics line, and
// inside the state write (internal/crashpoint), at staleness 0, 1 and
// 2, then resumes: every step is trained once and recorded once.
func TestSIGKILLAtCrashPoints(t *testing.T) {
	url := simURL(t)
	for _, tc := range []struct {
		staleness int
		stream    bool
	}{{0, false}, {1, false}, {2, false}, {1, true}, {2, true}} {
		name := fmt.Sprint("staleness", tc.staleness)
		points := []string{"after-done:2", "state-write:2", "after-metrics:1", "state-write:1", "after-done:2"}
		if tc.stream {
			name += "-stream"
			// Also with groups taken from the stream and no batch written,
			// with the rollouts written and no batch, and with groups
			// just journaled: the groups finished are read back from the
			// journal, none sampled or judged again, none in two batches.
			// They come first: the run is over before the later points.
			points = append([]string{"stream-taken:2", "group-journaled:3", "before-batch-journal:1", "stream-taken:1", "before-batch:1"}, points...)
		}
		staleness := tc.staleness
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"PARLEY_TEST_CRASH_DIR=" + dir, "PARLEY_TEST_CRASH_URL=" + url, fmt.Sprint("PARLEY_TEST_CRASH_STALENESS=", staleness)}
			if tc.stream {
				env = append(env, "PARLEY_TEST_CRASH_STREAM=1")
			}
			// Hits count within each process: each resumed run crashes at
			// the named point of its own second or first step.
			kills := killAtPoints(t, "TestCrashPoints", env, points...)
			if kills < 4 {
				t.Fatalf("%d kills landed, want at least 4", kills)
			}
			ms := readMetrics(t, dataset.RunDir(dir))
			if len(ms) != 5 {
				t.Fatalf("%d metrics lines, want 5", len(ms))
			}
			for i, m := range ms {
				if m["step"] != float64(i+1) {
					t.Errorf("metrics line %d is step %v", i, m["step"])
				}
			}
			b, _ := os.ReadFile(filepath.Join(dir, "consumed.log"))
			for s := 1; s <= 5; s++ {
				n := strings.Count(string(b), fmt.Sprintf("step %d\n", s))
				if _, done, _ := handshake.ReadDone(dataset.RunDir(dir).CheckpointDir(s)); n == 0 && done {
					n = 1 // killed between its DONE and its log line
				}
				if n != 1 {
					t.Errorf("step %d trained %d times across %d kills, want once", s, n, kills)
				}
			}
			if st, _, _ := train.LoadState(dataset.RunDir(dir).StatePath()); st.Step != 5 {
				t.Errorf("state step %d, want 5", st.Step)
			}
			if tc.stream {
				resumed := 0.0
				for _, m := range ms {
					resumed += m["groups_resumed"].(float64)
				}
				if resumed == 0 {
					t.Errorf("no step took a group from the journal after %d kills, some at stream-taken", kills)
				}
				checkGroupsOnce(t, dataset.RunDir(dir), 5, 4)
			}
			t.Logf("%d kills", kills)
		})
	}
}

// TestTempFilesRemovedOnStart (item 8): what interrupted atomic writes
// left in the run directory is removed when a run starts.
func TestTempFilesRemovedOnStart(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	stale := []string{filepath.Join(dir.Root(), ".state.json.tmp-123"), filepath.Join(dir.BatchesDir(), ".step-000001.parquet.tmp-9")}
	for _, p := range stale {
		os.WriteFile(p, []byte("half"), 0o644)
	}
	client, _ := llm.New(llm.Options{Endpoints: []string{url}})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
	go ft.run(ctx)
	_, err := train.Run(ctx, train.RunOptions{
		Loop: loopOptions(t, dir, client, 1, 0), FrozenConfig: []byte("run: {}\n"),
		Server: client, Model: sim.DefaultModel, Handshake: train.HandshakeFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after the run started", p)
		}
	}
}

// killAtPoints runs the test child once per crash point with env and
// crashpoint.EnvVar set to the point, then once more with none, which
// must succeed; it returns how many runs the point killed (SIGKILL). A
// point the resumed run is already past is no kill, any other failure
// fails the test.
func killAtPoints(t *testing.T, child string, env []string, points ...string) int {
	t.Helper()
	kills := 0
	for _, point := range points {
		if runChild(t, child, env, point) {
			kills++
		}
	}
	runChild(t, child, env, "")
	return kills
}

// runChild runs the test child once with env and crashpoint.EnvVar set to
// point (none: "") and reports whether the point killed it (SIGKILL); any
// other failure fails the test.
func runChild(t *testing.T, child string, env []string, point string) (killed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$")
	cmd.Env = append(append(os.Environ(), env...), crashpoint.EnvVar+"="+point)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == -1 && point != "" {
		return true
	}
	if err != nil {
		t.Fatalf("run with crash point %q: %v\n%s", point, err, out)
	}
	return false
}

// TestLostEndpointRunGoesOn (issue 28, item 10): an endpoint of two that
// stops for good while step 2 trains is lost when step 2's adapter is
// loaded: the run trains every step on the other, and the step lines
// after it count it in policy/endpoints_lost.
func TestLostEndpointRunGoesOn(t *testing.T) {
	var urls []string
	var stopB func()
	for i := range 2 {
		srv, err := sim.New(sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		stop := sync.OnceFunc(func() { ts.Close(); srv.Close() })
		t.Cleanup(stop)
		urls = append(urls, ts.URL)
		if i == 1 {
			stopB = stop
		}
	}
	dir := dataset.RunDir(t.TempDir())
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}, gate: func(step int) {
		if step == 2 {
			stopB()
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	l := newLoopClient(t, dir, llm.Options{Endpoints: urls, Retry: retry.Policy{BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond}}, 4, 0)
	if err := l.Run(ctx); err != nil {
		t.Fatalf("Run with an endpoint gone for good = %v, want the run to go on with the other", err)
	}
	for i, m := range readMetrics(t, dir) {
		want := 0.0
		if i >= 2 { // steps 3 and 4 sample after step 2's adapter load lost it
			want = 1
		}
		if m["policy/endpoints_lost"] != want {
			t.Errorf("step %v: policy/endpoints_lost %v, want %v", m["step"], m["policy/endpoints_lost"], want)
		}
	}
}

// checkGroupsOnce fails t unless every group of the run's steps 1..steps
// is in one step's rollouts only, with its g rollouts.
func checkGroupsOnce(t *testing.T, dir dataset.RunDir, steps, g int) {
	t.Helper()
	seen := map[string]int{}
	for s := 1; s <= steps; s++ {
		count := map[string]int{}
		err := dataset.ReadRollouts(dir.RolloutsPath(s), func(r dataset.Rollout) error {
			count[r.GroupID]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for id, n := range count {
			if prev, ok := seen[id]; ok {
				t.Errorf("group %s is in step %d's rollouts and step %d's", id, prev, s)
			}
			seen[id] = s
			if n != g {
				t.Errorf("step %d: group %s has %d rollouts, want %d", s, id, n, g)
			}
		}
	}
}
