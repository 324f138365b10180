package train_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/train"
)

// withEval turns on an evaluation every `every` steps on four held-out
// dilemmas, compared and scored by the test loop's rule judge, as parley
// train wires a rule judge.
func withEval(t *testing.T, every int, cmp func(harness.Comparer) harness.Comparer) func(*train.LoopOptions) {
	return func(o *train.LoopOptions) {
		all, err := deliberation.SampleCurriculum()
		if err != nil {
			t.Fatal(err)
		}
		var c harness.Comparer = harness.ScoreComparer{Judge: o.Judge}
		if cmp != nil {
			c = cmp(c)
		}
		dec, err := harness.NewDecodings([]string{report.DecodingGreedy}, o.Rollout.Sampling)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := harness.NewStepEvaluator(harness.StepEvalOptions{
			Prompts: dataset.SelectSplit(all, dataset.SplitEval)[:4],
			Aspect:  harness.Aspect{Name: "score", Judge: c}, Scorer: o.Judge, Scale: reward.ScaleOf(o.Judge),
			Decoding: dec[0], Concurrency: 4, JudgeConcurrency: 2,
			Game: o.Rollout.Game, Policy: o.Rollout.Policy, Base: o.Rollout.Model, Seed: o.Seed,
			ChatTemplateKwargs: o.Rollout.ChatTemplateKwargs, Logger: o.Logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		o.Eval = train.EvalOptions{Every: every, Evaluator: ev}
	}
}

// lines splits metrics.jsonl into step lines and evaluation lines.
func lines(t *testing.T, dir dataset.RunDir) (steps, evals []map[string]any) {
	t.Helper()
	for _, m := range readMetrics(t, dir) {
		if m["kind"] == metrics.EvalKind {
			evals = append(evals, m)
		} else {
			steps = append(steps, m)
		}
	}
	return steps, evals
}

func stepsOf(ms []map[string]any) []int {
	var out []int
	for _, m := range ms {
		out = append(out, int(m["step"].(float64)))
	}
	return out
}

// TestLoopEvalEvery: eval_every 2 over 4 steps against serve-sim writes
// the evaluations of steps 2 and 4, as files and as metrics lines with
// plausible values, which the report merges into those steps; step by
// step and streaming.
func TestLoopEvalEvery(t *testing.T) {
	url := simURL(t)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) { loopEvalEvery(t, url, stream) })
	}
}

// loopEvalEvery is TestLoopEvalEvery, step by step or streaming
// (staleness 1).
func loopEvalEvery(t *testing.T, url string, stream bool) {
	dir := dataset.RunDir(t.TempDir())
	k := 0
	if stream {
		k = 1
	}
	loader := &adapterRecorder{}
	var mu sync.Mutex
	var onEval []int
	if _, err := trained(t, dir, url, 4, k, withEval(t, 2, nil), func(o *train.LoopOptions) {
		o.Stream = stream
		o.Eval.OnEval = func(m map[string]any) { mu.Lock(); onEval = append(onEval, m["step"].(int)); mu.Unlock() }
		// The real loader (the simulator) behind a recorder of names.
		client := o.Adapters
		o.Adapters = recordingLoader{AdapterLoader: client, rec: loader}
	}); err != nil {
		t.Fatal(err)
	}
	steps, evals := lines(t, dir)
	if got := stepsOf(steps); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("step lines %v, want 1 2 3 4", got)
	}
	got := stepsOf(evals)
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("evaluation lines at steps %v, want 2 and 4", got)
	}
	slices.Sort(onEval)
	if !slices.Equal(onEval, []int{2, 4}) {
		t.Errorf("OnEval called for %v, want 2 and 4", onEval)
	}
	for _, m := range evals {
		step := int(m["step"].(float64))
		num := func(key metrics.Key) float64 {
			k := string(key)
			v, ok := m[k].(float64)
			if !ok {
				t.Errorf("step %d: %s = %v, want a number", step, k, m[k])
			}
			return v
		}
		wr, w, ti, l := num(metrics.KeyEvalWinRate), num(metrics.KeyEvalWins), num(metrics.KeyEvalTies), num(metrics.KeyEvalLosses)
		if w+ti+l != 8 || math.Abs(wr-100*(w+ti/2)/8) > 1e-9 {
			t.Errorf("step %d: win rate %v from %v/%v/%v, want two verdicts per prompt (8) and ties counting half", step, wr, w, ti, l)
		}
		for _, k := range []metrics.Key{metrics.KeyEvalScoreMean, metrics.KeyEvalBaseScoreMean, metrics.KeyEvalAgreementRate, metrics.KeyEvalBaseAgreementRate} {
			if v := num(k); v < 0 || v > 1 {
				t.Errorf("step %d: %s = %v, want it in [0, 1]", step, k, v)
			}
		}
		for _, key := range []metrics.Key{metrics.KeyEvalRoundsToAgreement, metrics.KeyEvalBaseRoundsToAgreement} {
			k := string(key)
			if v, ok := m[k].(float64); ok && (v < 1 || v > 3) {
				t.Errorf("step %d: %s = %v, want rounds in [1, 3]", step, k, v)
			}
		}
		r, ok, err := harness.ReadEval(dir, step)
		if err != nil || !ok {
			t.Fatalf("ReadEval(%d) = %v, %v", step, ok, err)
		}
		if r.Base != "sim-policy" || !strings.HasSuffix(r.Adapter, fmt.Sprintf("-%06d-eval", step)) || r.Decoding != report.DecodingGreedy ||
			r.Prompts != 4 || len(r.Comparisons) != 4 || r.Judge != "rule:keywords" || r.Scale.Name != "rule keywords" {
			t.Errorf("evals/step-%d.json = adapter %q base %q decoding %q prompts %d comparisons %d judge %q scale %+v",
				step, r.Adapter, r.Base, r.Decoding, r.Prompts, len(r.Comparisons), r.Judge, r.Scale)
		}
		if loader.loaded[r.Adapter] != r.AdapterPath {
			t.Errorf("adapter %s loaded from %q, want %q", r.Adapter, loader.loaded[r.Adapter], r.AdapterPath)
		}
	}
	// The base model scores the same on every evaluation (greedy, same
	// prompts): the reference line is flat.
	if base := string(metrics.KeyEvalBaseScoreMean); evals[0][base] != evals[1][base] {
		t.Errorf("base score %v then %v, want the same greedy base twice", evals[0][base], evals[1][base])
	}
	rm, err := report.ReadMetrics(dir.MetricsPath())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range rm.Steps {
		_, hasEval := rm.Rows[i][metrics.KeyEvalWinRate]
		_, hasScore := rm.Rows[i][metrics.KeyScoreMean]
		if hasEval != (s%2 == 0) || !hasScore {
			t.Errorf("report row of step %d: eval %v, training score %v; want the evaluation merged into steps 2 and 4", s, hasEval, hasScore)
		}
	}
}

// recordingLoader loads through a real loader and records the names.
type recordingLoader struct {
	train.AdapterLoader
	rec *adapterRecorder
}

func (r recordingLoader) LoadLoRA(ctx context.Context, name, path string) error {
	if err := r.rec.LoadLoRA(ctx, name, path); err != nil {
		return err
	}
	return r.AdapterLoader.LoadLoRA(ctx, name, path)
}

// blockingComparer holds every comparison until release is closed,
// recording the order of events.
type blockingComparer struct {
	harness.Comparer
	release <-chan struct{}
	ctx     context.Context
	events  *eventLog
}

func (b blockingComparer) CompareRollouts(ctx context.Context, l, r *dataset.Rollout) (reward.PairResult, error) {
	b.events.add(evalCompares)
	select {
	case <-b.release:
	case <-b.ctx.Done(): // a deadlock guard: the loop waited for the evaluation
		return reward.PairResult{}, b.ctx.Err()
	}
	return b.Comparer.(harness.RolloutComparer).CompareRollouts(ctx, l, r)
}

const evalCompares = "eval compares"

// eventLog records events in order; evalCompares only for the first
// comparison of each evaluation, and it closes started the first time.
type eventLog struct {
	mu      sync.Mutex
	events  []string
	cycle   bool // an evalCompares since the last evaluation was written
	started chan struct{}
}

func (e *eventLog) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case s == evalCompares && e.cycle:
		return
	case s == evalCompares:
		e.cycle = true
		if len(e.events) > 0 && e.started != nil {
			select {
			case <-e.started:
			default:
				close(e.started)
			}
		}
	case strings.HasPrefix(s, "eval "):
		e.cycle = false
	}
	e.events = append(e.events, s)
}

// TestEvalDoesNotStallLoop shows by the order of events that an
// evaluation runs beside training: step 2's evaluation starts comparing
// and its judge then holds every comparison until step 4 has trained; the
// trainer takes step 3 only once that evaluation is comparing. Steps 3
// and 4 train while the evaluation waits (were the loop waiting for it,
// neither would, and the guard would end the deadlock), and the run ends
// once both evaluations are written.
func TestEvalDoesNotStallLoop(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	events := &eventLog{started: make(chan struct{})}
	release := make(chan struct{})
	guard, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	block := func(c harness.Comparer) harness.Comparer {
		return blockingComparer{Comparer: c, release: release, ctx: guard, events: events}
	}
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}, gate: func(step int) {
		if step == 3 {
			select {
			case <-events.started:
			case <-guard.Done():
			}
		}
	}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go ft.run(ctx)
	l := newLoopClient(t, dir, llm.Options{Endpoints: []string{url}}, 4, 0, withEval(t, 2, block), func(o *train.LoopOptions) {
		o.OnStep = func(m map[string]any) {
			step := m["step"].(int)
			events.add(fmt.Sprintf("step %d trained", step))
			if step == 4 {
				close(release)
			}
		}
		o.Eval.OnEval = func(m map[string]any) { events.add(fmt.Sprintf("eval %d written", m["step"].(int))) }
	})
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"step 1 trained", "step 2 trained", evalCompares, "step 3 trained", "step 4 trained", "eval 2 written", evalCompares, "eval 4 written"}
	if !slices.Equal(events.events, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events.events, "\n"), strings.Join(want, "\n"))
	}
}

// TestEvalCrashPoints is the child process of TestSIGKILLInEvaluation.
func TestEvalCrashPoints(t *testing.T) {
	dir, url := os.Getenv("PARLEY_TEST_EVAL_CRASH_DIR"), os.Getenv("PARLEY_TEST_CRASH_URL")
	if dir == "" {
		t.Skip("child of TestSIGKILLInEvaluation")
	}
	ft := &fakeTrainer{dir: dataset.RunDir(dir), consumed: map[int]int{}, versions: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	edit := func(o *train.LoopOptions) {
		o.Eval.OnEval = func(m map[string]any) {
			f, _ := os.OpenFile(filepath.Join(dir, "evals.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			fmt.Fprintf(f, "eval %d\n", m["step"])
			f.Close()
		}
	}
	if err := newLoopClient(t, dataset.RunDir(dir), llm.Options{Endpoints: []string{url}}, 4, 0, withEval(t, 2, nil), edit).Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSIGKILLInEvaluation kills the run with SIGKILL inside step 2's
// evaluation (played and compared, nothing written), then between its
// file and its metrics line, then lets it finish: the first evaluation is
// redone, the second not, and metrics.jsonl has each evaluation's line
// once and each step's line once.
func TestSIGKILLInEvaluation(t *testing.T) {
	url := simURL(t)
	dir := t.TempDir()
	rd := dataset.RunDir(dir)
	for i, point := range []string{"eval-judged:1", "after-eval-file:1", ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEvalCrashPoints$")
		cmd.Env = append(os.Environ(), "PARLEY_TEST_EVAL_CRASH_DIR="+dir, "PARLEY_TEST_CRASH_URL="+url, crashpoint.EnvVar+"="+point)
		out, err := cmd.CombinedOutput()
		if point == "" {
			if err != nil {
				t.Fatalf("the last run failed: %v\n%s", err, out)
			}
			break
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
			t.Fatalf("run %d with %s was not killed: %v\n%s", i, point, err, out)
		}
		_, evals := lines(t, rd)
		_, fileErr := os.Stat(rd.EvalPath(2))
		switch point {
		case "eval-judged:1":
			if len(evals) != 0 || fileErr == nil {
				t.Fatalf("killed inside the evaluation: %d evaluation lines, file error %v; want none written", len(evals), fileErr)
			}
		case "after-eval-file:1":
			if len(evals) != 0 || fileErr != nil {
				t.Fatalf("killed after the evaluation file: %d evaluation lines, file error %v; want the file and no line", len(evals), fileErr)
			}
		}
	}
	steps, evals := lines(t, rd)
	if got := stepsOf(steps); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("step lines %v, want 1 2 3 4 once each", got)
	}
	got := stepsOf(evals)
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("evaluation lines at steps %v, want 2 and 4 once each", got)
	}
	for _, m := range evals {
		step := int(m["step"].(float64))
		r, ok, err := harness.ReadEval(rd, step)
		if err != nil || !ok {
			t.Fatalf("ReadEval(%d) = %v, %v", step, ok, err)
		}
		want, _ := json.Marshal(r.Metrics())
		var wantM map[string]any
		json.Unmarshal(want, &wantM)
		if fmt.Sprint(wantM) != fmt.Sprint(m) {
			t.Errorf("step %d: metrics line %v differs from its file's %v", step, m, wantM)
		}
	}
	// Step 2's evaluation ran to its end in the second process (killed
	// after its file) and is not run again; step 4's ran in the third.
	b, _ := os.ReadFile(filepath.Join(dir, "evals.log"))
	if string(b) != "eval 4\n" {
		t.Errorf("evaluations completed through OnEval: %q, want only step 4's (step 2's was written by the killed run)", b)
	}
}

// TestEvalsReachTheTrainer: an evaluation recorded by the loop rides in the
// sidecar of the next batch written (metrics.KeyEvals: its step, eval/…
// metrics and sample dialogues), which the trainer's TensorBoard and W&B
// reporters read; the metrics.jsonl step line does not repeat it. The
// evaluation of step 2 is made to be recorded at the start of the resumed
// run (its line lost, as after a crash between the file and the line), so
// the batch that carries it is step 3's.
func TestEvalsReachTheTrainer(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	if _, err := trained(t, dir, url, 2, 0, withEval(t, 2, nil)); err != nil {
		t.Fatal(err)
	}
	steps, evals := lines(t, dir)
	if len(evals) != 1 {
		t.Fatalf("%d evaluation lines, want 1", len(evals))
	}
	var keep []byte
	for _, m := range steps {
		b, _ := json.Marshal(m)
		keep = append(append(keep, b...), '\n')
	}
	if err := os.WriteFile(dir.MetricsPath(), keep, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trained(t, dir, url, 3, 0, withEval(t, 2, nil)); err != nil {
		t.Fatal(err)
	}
	evs := sidecarEvals(t, dir, 3)
	if len(evs) != 1 {
		t.Fatalf("step 3's sidecar carries %d evaluations, want step 2's", len(evs))
	}
	ev := evs[0]
	wr, ok := ev.Metrics[string(metrics.KeyEvalWinRate)]
	if ev.Step != 2 || !ok || wr != evals[0][string(metrics.KeyEvalWinRate)] || !strings.Contains(ev.Samples, "- trained, ") || !strings.Contains(ev.Samples, "- base, ") {
		t.Errorf("evaluation handed to the trainer: %+v, want step 2 with win rate %v and sample dialogues", ev, evals[0][string(metrics.KeyEvalWinRate)])
	}
	for _, m := range readMetrics(t, dir) {
		if _, ok := m[string(metrics.KeyEvals)]; ok {
			t.Errorf("metrics.jsonl line of step %v has %q", m["step"], metrics.KeyEvals)
		}
	}
	if _, evals := lines(t, dir); len(evals) != 1 {
		t.Errorf("%d evaluation lines after the resume, want step 2's once", len(evals))
	}
}
