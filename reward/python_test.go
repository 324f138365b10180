package reward

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/pkgdoc"
)

// testPython is the interpreter of parley's Python environment
// ($PARLEY_PYTHON, else the module's .venv/bin/python) and the worker's
// environment: PYTHONPATH on this tree's scripts, so that the worker and
// the example tested are this tree's. It skips without one.
func testPython(t testing.TB) (python string, env []string) {
	t.Helper()
	root, err := pkgdoc.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	python = os.Getenv("PARLEY_PYTHON")
	if python == "" {
		python = filepath.Join(root, ".venv", "bin", "python")
		if _, err := os.Stat(python); err != nil {
			t.Skip("no Python environment: PARLEY_PYTHON is unset and there is no .venv (make venv)")
		}
	}
	return python, []string{"PYTHONPATH=" + filepath.Join(root, "scripts")}
}

// newTestPython starts a Python judge of the example's function fn,
// logging into an observer.
func newTestPython(t *testing.T, fn string, edit func(*PythonOptions)) (*PythonJudge, *observer.ObservedLogs) {
	t.Helper()
	python, env := testPython(t)
	core, logs := observer.New(zap.InfoLevel)
	opts := PythonOptions{Python: python, Function: "parley_tools.rewards_example:" + fn, Env: env, Timeout: 20 * time.Second, Logger: zap.New(core)}
	if edit != nil {
		edit(&opts)
	}
	j, err := NewPythonJudge(opts)
	if err != nil {
		t.Fatalf("NewPythonJudge(%s): %v", fn, err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j, logs
}

// pyRolloutOf is a two-role rollout whose final is final.
func pyRolloutOf(id, final string) dataset.Rollout {
	r := *therapist()
	r.RolloutID, r.Final = id, final
	r.Roles = []dataset.RoleOutcome{{Role: "A"}, {Role: "B"}}
	return r
}

// TestPythonJudge runs the real worker on the example's functions, a batch
// of rollouts at once: scores, per-role scores, an exception, a bad value,
// a score out of range.
func TestPythonJudge(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	tests := []struct {
		name, fn string
		min, max float64
		final    string
		want     float64
		roles    map[string]float32 // nil: every role earns the score
		errWant  string             // a judge failure containing this
	}{
		{"keywords and length", "keyword_length", 0, 0, "together we share " + words(37), 0.5*2.0/3 + 0.5, nil, ""},
		{"empty final", "keyword_length", 0, 0, "", 0, nil, ""},
		// therapist: A says 12 words, B 8.
		{"per role", "per_role_length", 0, 0, "x", 0.5, map[string]float32{"A": 12.0 / 20, "B": 8.0 / 20}, ""},
		{"exception", "raises", 0, 0, "boom", 0, nil, "ValueError: the final says boom"},
		{"no exception", "raises", 0, 0, "calm", 1, nil, ""},
		{"bad value", "bad_value", 0, 0, "x", 0, nil, "returned 'five' (str)"},
		{"out of range", "raises", 2, 5, "calm", 0, nil, "score 1 is outside [2, 5]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, logs := newTestPython(t, tt.fn, func(o *PythonOptions) { o.Min, o.Max = tt.min, tt.max })
			rs := []dataset.Rollout{pyRolloutOf("r1", tt.final), pyRolloutOf("r2", tt.final), pyRolloutOf("r3", tt.final)}
			st := ScoreAll(t.Context(), j, rs, 3)
			for _, r := range rs {
				if tt.errWant != "" {
					if r.Judged || !strings.Contains(r.JudgeError, tt.errWant) {
						t.Fatalf("%s: judged %v, error %q; want a judge failure with %q", r.RolloutID, r.Judged, r.JudgeError, tt.errWant)
					}
					for _, ro := range r.Roles {
						if ro.Scored {
							t.Errorf("%s: role %s scored after a judge failure", r.RolloutID, ro.Role)
						}
					}
					continue
				}
				if !r.Judged || r.JudgeError != "" {
					t.Fatalf("%s: judged %v, error %q", r.RolloutID, r.Judged, r.JudgeError)
				}
				if d := float64(r.Score) - tt.want; d > 1e-6 || d < -1e-6 {
					t.Errorf("%s: score %v, want %v", r.RolloutID, r.Score, tt.want)
				}
				for _, ro := range r.Roles {
					want := float32(tt.want)
					if tt.roles != nil {
						want = tt.roles[ro.Role]
					}
					if !ro.Scored || ro.Score-want > 1e-6 || want-ro.Score > 1e-6 {
						t.Errorf("%s: role %s scored %v %v, want %v", r.RolloutID, ro.Role, ro.Scored, ro.Score, want)
					}
				}
				if r.JudgeModel != "python parley_tools.rewards_example:"+tt.fn {
					t.Errorf("%s: judge model %q", r.RolloutID, r.JudgeModel)
				}
			}
			if tt.errWant != "" && st.Failed != len(rs) {
				t.Errorf("stats %+v, want %d failed", st, len(rs))
			}
			if tt.name == "exception" {
				if got := logs.FilterMessage("python judge: the function raised").All(); len(got) == 0 || !strings.Contains(fmt.Sprint(got[0].ContextMap()["traceback"]), "Traceback (most recent call last)") {
					t.Errorf("no traceback logged: %v", logs.All())
				}
			}
			if j.started != 1 {
				t.Errorf("the worker started %d times, want once", j.started)
			}
		})
	}
}

// TestPythonJudgeBatches: concurrent calls share batches (fewer calls
// than rollouts), bounded by BatchSize.
func TestPythonJudgeBatches(t *testing.T) {
	j, _ := newTestPython(t, "keyword_length", func(o *PythonOptions) { o.BatchSize = 4 })
	rs := make([]dataset.Rollout, 16)
	for i := range rs {
		rs[i] = pyRolloutOf(fmt.Sprint(i), "together")
	}
	if st := ScoreAll(t.Context(), j, rs, 16); st.Judged != 16 {
		t.Fatalf("ScoreAll: %+v", st)
	}
	w := j.w
	if w == nil || w.seq < 4 || w.seq >= 16 {
		t.Errorf("16 rollouts at 16 in flight in batches of 4 took %v calls, want 4 to 15", w)
	}
}

// TestPythonJudgeWorkerDies: a worker that dies fails its batch (never
// hangs) and the next batch starts a new one, with a warning.
func TestPythonJudgeWorkerDies(t *testing.T) {
	j, logs := newTestPython(t, "exits", nil)
	rs := []dataset.Rollout{pyRolloutOf("dies", "exit")}
	ScoreAll(t.Context(), j, rs, 1)
	if rs[0].Judged || !strings.Contains(rs[0].JudgeError, "the worker exited (exit status 3) during a batch of 1") {
		t.Fatalf("judged %v, error %q; want the worker's exit", rs[0].Judged, rs[0].JudgeError)
	}
	for i := range 2 {
		rs = []dataset.Rollout{pyRolloutOf("lives", "fine")}
		ScoreAll(t.Context(), j, rs, 1)
		if !rs[0].Judged || rs[0].Score != 1 {
			t.Fatalf("call %d after the exit: judged %v, error %q", i, rs[0].Judged, rs[0].JudgeError)
		}
	}
	if n := logs.FilterMessage("python judge: restarting the worker").Len(); j.started != 2 || n != 1 {
		t.Errorf("worker starts %d, restart warnings %d; want 2 and 1", j.started, n)
	}
}

// TestPythonJudgeTimeout: a batch past its timeout fails (never hangs),
// its worker is killed, and the next batch gets a new one, with a warning.
func TestPythonJudgeTimeout(t *testing.T) {
	j, logs := newTestPython(t, "sleeps", func(o *PythonOptions) { o.Timeout = 2 * time.Second })
	rs := []dataset.Rollout{pyRolloutOf("slow", "sleep")}
	start := time.Now()
	ScoreAll(t.Context(), j, rs, 1)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("a timed-out batch took %s", el)
	}
	if rs[0].Judged || !strings.Contains(rs[0].JudgeError, "timed out after 2s (judge.python.timeout)") {
		t.Fatalf("judged %v, error %q; want a timeout", rs[0].Judged, rs[0].JudgeError)
	}
	rs = []dataset.Rollout{pyRolloutOf("fast", "quick")}
	ScoreAll(t.Context(), j, rs, 1)
	if !rs[0].Judged || rs[0].Score != 1 {
		t.Fatalf("after a timeout: judged %v, score %v, error %q", rs[0].Judged, rs[0].Score, rs[0].JudgeError)
	}
	if j.started != 2 || logs.FilterMessage("python judge: restarting the worker").Len() != 1 {
		t.Errorf("worker starts %d, restart warnings %d; want 2 and 1", j.started, logs.FilterMessage("python judge: restarting the worker").Len())
	}
}

// TestPythonJudgeStderr: what the function prints reaches the log, not the
// protocol; a withheld variable (an API key) does not reach the function
// (it scores 0.5 when it sees one).
func TestPythonJudgeStderr(t *testing.T) {
	dir := t.TempDir()
	src := "import os\ndef score(r):\n    print('hello from', r['id'])\n    return 0.5 if os.environ.get('PYJUDGE_TEST_KEY') else 0.25\n"
	t.Setenv("PYJUDGE_TEST_KEY", "secret")
	if err := os.WriteFile(filepath.Join(dir, "printing.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	j, logs := newTestPython(t, "", func(o *PythonOptions) {
		o.Function, o.Path, o.Withhold = "printing:score", []string{dir}, []string{"PYJUDGE_TEST_KEY"}
	})
	rs := []dataset.Rollout{pyRolloutOf("r-print", "x")}
	if st := ScoreAll(t.Context(), j, rs, 1); st.Judged != 1 || rs[0].Score != 0.25 {
		t.Fatalf("ScoreAll: %+v, %+v", st, rs[0])
	}
	deadline := time.Now().Add(5 * time.Second)
	for logs.FilterField(zap.String("stderr", "hello from r-print")).Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the function's print is not in the log: %v", logs.All())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPythonJudgeBadSetup: a function that does not import, a bad name and
// a missing interpreter are errors at construction naming the fix.
func TestPythonJudgeBadSetup(t *testing.T) {
	python, env := testPython(t)
	tests := []struct {
		name, python, fn, want string
	}{
		{"no module", python, "no_such_module:f", "config key judge.python.function: no_such_module:f: ModuleNotFoundError"},
		{"no function", python, "parley_tools.rewards_example:nope", "AttributeError"},
		{"not module:function", python, "rewards", `function "rewards" is not module:function`},
		{"no interpreter", "/nonexistent/python", "m:f", "judge.python.interpreter (or PARLEY_PYTHON)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := NewPythonJudge(PythonOptions{Python: tt.python, Function: tt.fn, Env: env, Timeout: 20 * time.Second})
			if err == nil {
				_ = j.Close()
				t.Fatalf("NewPythonJudge(%s) = nil error, want %q", tt.fn, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewPythonJudge(%s) = %v, want %q", tt.fn, err, tt.want)
			}
		})
	}
}

// TestPythonJudgeCancel: a cancelled context fails the call at once.
func TestPythonJudgeCancel(t *testing.T) {
	j, _ := newTestPython(t, "sleeps", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	r := pyRolloutOf("slow", "sleep")
	if _, err := j.Judge(ctx, &r); err == nil {
		t.Fatal("Judge after the context ended: nil error")
	}
}

// BenchmarkPythonJudge: rollouts judged per second through one worker
// (the example's keyword_length), 32 calls in flight, by batch size.
//
//	go test ./reward -run '^$' -bench PythonJudge
func BenchmarkPythonJudge(b *testing.B) {
	for _, size := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			python, env := testPython(b)
			j, err := NewPythonJudge(PythonOptions{Python: python, Function: "parley_tools.rewards_example:keyword_length", Env: env, BatchSize: size})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			rs := make([]dataset.Rollout, 256)
			b.ResetTimer()
			for range b.N {
				for i := range rs {
					rs[i] = pyRolloutOf(fmt.Sprint(i), "together we share")
				}
				if st := ScoreAll(b.Context(), j, rs, 32); st.Judged != len(rs) {
					b.Fatalf("ScoreAll: %+v", st)
				}
			}
			b.ReportMetric(float64(b.N*len(rs))/b.Elapsed().Seconds(), "rollouts/s")
		})
	}
}
