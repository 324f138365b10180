package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/sim"
)

// TestWriteExportFixtures writes exports for the Python side's tests
// (scripts/tests/test_export_interop.py) when PARLEY_EXPORT_FIXTURE_DIR is
// set, made as a user makes them: parley rollout against serve-sim, parley
// score with two judges, parley export.
//
//	DIR/ca.jsonl        scored by the simulated CA judge (integral scores)
//	DIR/rule.jsonl      scored by a rule (fractional scores)
//	DIR/unjudged.jsonl  parley rollout's output, never scored
//	DIR/ca-hf/          the CA export as a Hugging Face dataset folder
//
// Without the variable it does nothing.
func TestWriteExportFixtures(t *testing.T) {
	dir := os.Getenv("PARLEY_EXPORT_FIXTURE_DIR")
	if dir == "" {
		t.Skip("PARLEY_EXPORT_FIXTURE_DIR not set")
	}
	srv, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	base := fmt.Sprintf("policy:\n  endpoints: [%q]\nrollout:\n  group_size: 4\n", ts.URL)
	ca := writeYAML(t, base+fmt.Sprintf("judge:\n  kind: ca\n  base_url: %q\n  model: sim-judge\n  api_key_env: \"\"\n", ts.URL+"/v1"))
	rule := writeYAML(t, base+"judge:\n  kind: rule\n  rule:\n    kind: length\n    target_length: 40\n")
	run := func(c interface {
		SetArgs([]string)
		ExecuteContext(context.Context) error
	}, args ...string) {
		t.Helper()
		c.SetArgs(args)
		if err := c.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	ro := filepath.Join(t.TempDir(), "ro")
	run(newRolloutCmd(quietApp()), "--config", ca, "--out", ro, "--prompts", "4")
	in := filepath.Join(ro, "rollouts.parquet")
	for name, cfg := range map[string]string{"ca": ca, "rule": rule} {
		out := filepath.Join(t.TempDir(), name)
		run(newScoreCmd(quietApp()), "--config", cfg, "--in", in, "--out", out)
		run(newExportCmd(quietApp()), "--from", out, "--format", "jsonl", "--out", filepath.Join(dir, name+".jsonl"))
		if name == "ca" {
			run(newExportCmd(quietApp()), "--from", out, "--format", "hf", "--out", filepath.Join(dir, "ca-hf"))
		}
	}
	run(newExportCmd(quietApp()), "--from", ro, "--format", "jsonl", "--out", filepath.Join(dir, "unjudged.jsonl"))
	t.Logf("export fixtures written to %s", dir)
}
