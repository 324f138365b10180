package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

// TestEndowmentTrainingStep plays one training step's rollouts of the
// endowment game against serve-sim with the holder trained and the
// requester drawn per group from a pool (an adapter, the base model, the
// game's script), scores them with the game's scorer into a batch, and
// exports the holder's chats of the games it did not lose.
func TestEndowmentTrainingStep(t *testing.T) {
	srv, err := sim.New(sim.Options{Model: "hold-g40", Games: mustSimGames(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	cfg := writeYAML(t, fmt.Sprintf(`policy: {endpoints: [%q], model: hold-g40}
game: {env: endowment}
curriculum: {path: builtin:endowment}
rollout: {group_size: 4, concurrency: 8}
roles:
  requester:
    policy: pool
    pool:
      - {policy: adapter, model: req-p90, adapter_path: /sim/req-p90}
      - {policy: base}
      - {policy: scripted}
judge: {kind: game, base_url: %q, model: sim-judge, api_key_env: ""}
grpo: {mask: dialogue}
`, ts.URL, ts.URL+"/v1"))
	ro := t.TempDir()
	cmd := newRolloutCmd(quietApp())
	cmd.SetArgs([]string{"--config", cfg, "--out", ro})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs, err := dataset.ReadAllRollouts(filepath.Join(ro, "rollouts.parquet"))
	if err != nil || len(rs) != 48 {
		t.Fatalf("%d rollouts, %v; want 12 scenarios × 4", len(rs), err)
	}
	byGroup := map[string]string{}
	opponents := map[string]bool{}
	for _, r := range rs {
		if r.Failed {
			t.Fatalf("%s failed: %s", r.RolloutID, r.Error)
		}
		q := r.Role(endowment.RoleRequester)
		opp := string(q.Policy) + ":" + q.Model
		if prev, ok := byGroup[r.GroupID]; ok && prev != opp {
			t.Errorf("group %s holds two opponents: %s and %s", r.GroupID, prev, opp)
		}
		byGroup[r.GroupID] = opp
		opponents[opp] = true
		if h := r.Role(endowment.RoleHolder); !h.Trained || q.Trained {
			t.Errorf("%s: holder trained %v, requester trained %v", r.RolloutID, h.Trained, q.Trained)
		}
	}
	if len(opponents) < 2 {
		t.Errorf("12 groups drew only %v from a pool of 3", opponents)
	}
	out := t.TempDir()
	sc := newScoreCmd(quietApp())
	sc.SetArgs([]string{"--config", cfg, "--in", filepath.Join(ro, "rollouts.parquet"), "--out", out})
	if err := sc.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := dataset.ReadBatch(dataset.RunDir(out).BatchPath(1))
	if err != nil || len(rows) == 0 {
		t.Fatalf("batch: %d rows, %v", len(rows), err)
	}
	perGroup := map[string][]float64{}
	for _, r := range rows {
		if r.Role != endowment.RoleHolder {
			t.Errorf("a %s sequence in the batch: only the trained holder is trained", r.Role)
		}
		perGroup[r.GroupID] = append(perGroup[r.GroupID], float64(r.Advantage))
	}
	for g, adv := range perGroup {
		s := 0.0
		for _, a := range adv {
			s += a
		}
		if math.Abs(s/float64(len(adv))) > 1e-5 {
			t.Errorf("group %s: holder advantages %v do not centre on 0", g, adv)
		}
	}
	exp := newExportCmd(quietApp())
	file := filepath.Join(out, "holders.jsonl")
	exp.SetArgs([]string{"--from", out, "--out", file, "--role", "holder", "--where", "share_given<=0.01", "--traces"})
	if err := exp.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		n++
		if !strings.Contains(s.Text(), `"role":"system"`) || !strings.Contains(s.Text(), "<think>") {
			t.Errorf("exported line lacks the holder's system prompt or its traces: %.200s", s.Text())
		}
	}
	t.Logf("%d of %d holder games kept their endowment (share ≤ 1%%)", n, len(rs))
}
