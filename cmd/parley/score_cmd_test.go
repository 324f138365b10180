package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/sim"
)

// TestScoreAndExport rolls out against serve-sim, scores the rollouts with
// the simulated CA judge into a batch, refuses to overwrite that batch,
// and exports the scored rollouts as JSONL.
func TestScoreAndExport(t *testing.T) {
	srv, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	cfg := writeYAML(t, fmt.Sprintf("policy:\n  endpoints: [%q]\nrollout:\n  group_size: 4\njudge:\n  kind: ca\n  base_url: %q\n  model: sim-judge\n  api_key_env: \"\"\n", ts.URL, ts.URL+"/v1"))
	ro := t.TempDir()
	cmd := newRolloutCmd(quietApp())
	cmd.SetArgs([]string{"--config", cfg, "--out", ro, "--prompts", "4"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	score := func(extra ...string) error {
		c := newScoreCmd(quietApp())
		c.SetArgs(append([]string{"--config", cfg, "--in", filepath.Join(ro, "rollouts.parquet"), "--out", out}, extra...))
		return c.ExecuteContext(context.Background())
	}
	if err := score(); err != nil {
		t.Fatal(err)
	}
	ready, err := dataset.VerifyBatch(dataset.RunDir(out).BatchPath(1), 1)
	if err != nil || ready.Rows == 0 {
		t.Fatalf("VerifyBatch = %+v, %v", ready, err)
	}
	rows, err := dataset.ReadBatch(dataset.RunDir(out).BatchPath(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Step != 1 || r.Reward < 1 || r.Reward > 5 {
			t.Fatalf("batch row step %d reward %g, want step 1 and a CA score in 1..5", r.Step, r.Reward)
		}
	}
	if err := score(); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second score = %v, want a refusal naming --force", err)
	}
	if err := score("--force"); err != nil {
		t.Errorf("score --force = %v", err)
	}
	exp := newExportCmd(quietApp())
	exp.SetArgs([]string{"--from", out, "--format", "jsonl", "--out", filepath.Join(out, "export")})
	if err := exp.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
}
