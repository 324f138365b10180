package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/sim"
)

// testPython is the interpreter of parley's Python environment
// ($PARLEY_PYTHON, else the module's .venv/bin/python), with PYTHONPATH set
// to this tree's scripts so that the Python judge's worker and example are
// this tree's; it skips without one.
func testPython(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	python := os.Getenv(EnvPython)
	if python == "" {
		python = filepath.Join(root, ".venv", "bin", "python")
		if _, err := os.Stat(python); err != nil {
			t.Skip("no Python environment: PARLEY_PYTHON is unset and there is no .venv (make venv)")
		}
	}
	t.Setenv("PYTHONPATH", filepath.Join(root, "scripts"))
	return python
}

// TestPythonJudgeCommands: `parley score` judges the endowment games
// `parley rollout` played on serve-sim with a Python function's per-role
// scores (scripts/parley_tools/rewards_example.py).
func TestPythonJudgeCommands(t *testing.T) {
	python := testPython(t)
	url := startSim(t, sim.Options{})
	ctx := context.Background()
	cfg := rolloutConfig(t, url, 7)
	cfg.Judge.Kind = "python"
	cfg.Judge.Python.Function = "parley_tools.rewards_example:per_role_length"
	cfg.Judge.Python.Interpreter = python
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	played := t.TempDir()
	if err := Rollout(ctx, cfg, Env{}, RolloutOptions{Out: played, Prompts: 2}); err != nil {
		t.Fatal(err)
	}
	check := func(what, path string) {
		t.Helper()
		rs, err := dataset.ReadAllRollouts(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			t.Fatalf("%s: no rollouts in %s", what, path)
		}
		for _, r := range rs {
			if !r.Judged || r.JudgeModel != "python parley_tools.rewards_example:per_role_length" {
				t.Fatalf("%s: rollout %s judged %v by %q (error %q)", what, r.RolloutID, r.Judged, r.JudgeModel, r.JudgeError)
			}
			sum := float32(0)
			for _, ro := range r.Roles {
				if !ro.Scored {
					t.Errorf("%s: rollout %s role %s unscored", what, r.RolloutID, ro.Role)
				}
				sum += ro.Score
			}
			// The example's role scores are shares of the dialogue's words.
			if d := sum - 1; d > 1e-4 || d < -1e-4 {
				t.Errorf("%s: rollout %s role scores sum to %v, want 1", what, r.RolloutID, sum)
			}
		}
	}

	out := t.TempDir()
	if err := Score(ctx, cfg, Env{}, ScoreOptions{In: filepath.Join(played, "rollouts.parquet"), Out: out, Step: -1, PolicyVersion: -1}); err != nil {
		t.Fatal(err)
	}
	scored, err := filepath.Glob(filepath.Join(out, "rollouts", "*.parquet"))
	if err != nil || len(scored) == 0 {
		entries, _ := os.ReadDir(out)
		t.Fatalf("score: no rollouts under %s (%v): %v", out, err, entries)
	}
	check("score", scored[0])
}

// TestPythonJudgeConfigErrors: a bad judge.python section is refused naming
// its key.
func TestPythonJudgeConfigErrors(t *testing.T) {
	tests := []struct{ body, key string }{
		{"judge: {kind: python, python: {function: rewards}}", "judge.python.function"},
		{"judge: {kind: python, python: {function: m:f, batch_size: 0}}", "judge.python.batch_size"},
		{"judge: {kind: python, python: {function: m:f, timeout: 0s}}", "judge.python.timeout"},
		{"judge: {kind: python, python: {function: m:f, min: 1, max: 1}}", "judge.python.max"},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: %v, want an error naming %s", tt.body, err, tt.key)
		}
	}
}
