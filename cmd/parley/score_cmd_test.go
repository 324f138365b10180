package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/dataset/export"
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
	// Export reads what rollout and score wrote, by directory or by file.
	exportJSONL := func(args ...string) []export.Record {
		t.Helper()
		dst := filepath.Join(t.TempDir(), "x.jsonl")
		exp := newExportCmd(quietApp())
		exp.SetArgs(append(args, "--format", "jsonl", "--out", dst))
		if err := exp.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("export %v: %v", args, err)
		}
		return readJSONL[export.Record](t, dst)
	}
	tests := []struct {
		name   string
		args   []string
		judged bool
	}{
		{"score's output directory", []string{"--from", out}, true},
		{"rollout's output directory", []string{"--from", ro}, false},
		{"rollout's file", []string{"--in", filepath.Join(ro, "rollouts.parquet")}, false},
	}
	// An existing --out needs --force.
	dst := filepath.Join(t.TempDir(), "x.jsonl")
	for i, args := range [][]string{{}, {}, {"--force"}} {
		exp := newExportCmd(quietApp())
		exp.SetArgs(append([]string{"--from", out, "--format", "jsonl", "--out", dst}, args...))
		err := exp.ExecuteContext(context.Background())
		if wantErr := i == 1; (err != nil) != wantErr || (wantErr && !strings.Contains(err.Error(), "--force")) {
			t.Errorf("export #%d %v into %s = %v, want an error naming --force: %v", i+1, args, dst, err, wantErr)
		}
	}
	for _, tt := range tests {
		recs := exportJSONL(tt.args...)
		if len(recs) == 0 {
			t.Fatalf("%s: nothing exported", tt.name)
		}
		for _, r := range recs {
			if r.Judged != tt.judged || (r.Score != nil) != tt.judged || (r.Reward != nil) != tt.judged {
				t.Fatalf("%s: record judged %v score %v reward %v, want judged %v with a score and reward only then", tt.name, r.Judged, r.Score, r.Reward, tt.judged)
			}
			if tt.judged && (r.ScoreScale == nil || *r.ScoreScale != "CA 1–5" || r.JudgeModel == nil || *r.JudgeModel != "sim-judge" || r.Advantage == nil) {
				t.Fatalf("%s: judged record scale %v model %v advantage %v, want CA 1–5, sim-judge and an advantage", tt.name, r.ScoreScale, r.JudgeModel, r.Advantage)
			}
			if r.Messages[0].Role != "system" || r.Personas.NameA == nil || r.Split == nil || *r.Split != "train" {
				t.Fatalf("%s: record messages[0] %+v personas %+v split %v, want a system prompt, named personas, split train", tt.name, r.Messages[0], r.Personas, r.Split)
			}
		}
	}
}

// TestScoreJudgeAlwaysFails scores rollouts against a judge that answers
// 500 to every call with judge.max_retries 0: parley score fails naming
// the first judge error, makes one attempt per rollout, and writes no
// .ready and no batch.
func TestScoreJudgeAlwaysFails(t *testing.T) {
	var calls atomic.Int64
	judge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			calls.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"judge melted","type":"server_error"}}`)
	}))
	defer judge.Close()
	srv := startSim(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", srv.URL, judge.URL)
	ro := filepath.Join(dir, "ro")
	if _, err := run(t, newRolloutCmd(quietApp()), "--config", cfg, "--out", ro, "--prompts", "2", "--group-size", "2"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "scored")
	_, err := run(t, newScoreCmd(quietApp()), "--config", cfg, "--judge.max_retries", "0",
		"--in", filepath.Join(ro, "rollouts.parquet"), "--out", out)
	if err == nil {
		t.Fatal("parley score against a judge failing every call succeeded")
	}
	msg := userMessage(err)
	t.Logf("parley score: %s", msg)
	for _, want := range []string{"4 of 4 rollouts failed (0 sampling, 4 judging)", "first error:", "judge melted"} {
		if !strings.Contains(msg, want) {
			t.Errorf("parley score says %q\nwant it to say %q", msg, want)
		}
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("the judge got %d chat calls, want 4 (one per rollout, judge.max_retries 0)", n)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".ready") || strings.Contains(p, "batch")) {
			t.Errorf("parley score left %s after failing", p)
		}
		return nil
	})
}

// TestScoreGroupMode scores 4 groups of 4 with judge.mode group against
// serve-sim: one judge request per group and one more per group for the
// position check (share 1), every rollout's rationale headed by its place
// in its group's order, the position counts in score-summary.json; a
// judge that leaves a member unscored fails every rollout, naming it.
func TestScoreGroupMode(t *testing.T) {
	for _, tt := range []struct {
		name, fault string
		wantErr     string
	}{
		{"good", "", ""},
		{"missing member", sim.GroupFaultMissing, "did not score S4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sim.New(sim.Options{JudgeGroupFault: tt.fault})
			if err != nil {
				t.Fatal(err)
			}
			var chats atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/chat/completions") {
					chats.Add(1)
				}
				s.Handler().ServeHTTP(w, r)
			}))
			defer ts.Close()
			cfg := writeYAML(t, fmt.Sprintf("policy:\n  endpoints: [%q]\nrollout:\n  group_size: 4\njudge:\n  kind: ca\n  mode: group\n  position_check: 1\n  max_retries: 1\n  base_url: %q\n  model: sim-judge\n  api_key_env: \"\"\n", ts.URL, ts.URL+"/v1"))
			ro := t.TempDir()
			if _, err := run(t, newRolloutCmd(quietApp()), "--config", cfg, "--out", ro, "--prompts", "4"); err != nil {
				t.Fatal(err)
			}
			chats.Store(0)
			out := t.TempDir()
			_, err = run(t, newScoreCmd(quietApp()), "--config", cfg, "--in", filepath.Join(ro, "rollouts.parquet"), "--out", out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(userMessage(err), tt.wantErr) || !strings.Contains(userMessage(err), "16 of 16 rollouts failed") {
					t.Fatalf("parley score = %v, want every rollout failed naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := chats.Load(); n != 8 {
				t.Errorf("the judge got %d requests, want 8 (4 groups, each re-scored reversed)", n)
			}
			rs, err := dataset.ReadAllRollouts(dataset.RunDir(out).RolloutsPath(1))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if !r.Judged || !strings.HasPrefix(r.JudgeRationale, "[group: S") || !strings.Contains(r.JudgeRationale, " of 4, shuffle ") || !strings.Contains(r.JudgeRationale, "; reversed: at ") {
					t.Errorf("%s: judged %v rationale %q, want it headed by its group order", r.RolloutID, r.Judged, r.JudgeRationale)
				}
			}
			var sum struct {
				Judge map[string]any `json:"judge"`
			}
			readJSON(t, filepath.Join(out, "score-summary.json"), &sum)
			if j := sum.Judge; j["Calls"] != 8.0 || j["PositionGroups"] != 4.0 || j["PositionMembers"] != 16.0 || j["Judged"] != 16.0 {
				t.Errorf("score-summary.json judge = %v, want 16 judged in 8 calls, 4 groups position-checked", j)
			}
		})
	}
}

// TestScoreGroupVsPointwiseCost measures on serve-sim what a step of 4
// groups of 8 costs the judge, pointwise and in group mode (with and
// without the position check): requests, prompt and completion tokens,
// from parley score's score-summary.json. The README quotes its log:
//
//	go test ./cmd/parley -run TestScoreGroupVsPointwiseCost -v
func TestScoreGroupVsPointwiseCost(t *testing.T) {
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	base := fmt.Sprintf("policy:\n  endpoints: [%q]\nrollout:\n  group_size: 8\njudge:\n  kind: ca\n  base_url: %q\n  model: sim-judge\n  api_key_env: \"\"\n", ts.URL, ts.URL+"/v1")
	ro := t.TempDir()
	if _, err := run(t, newRolloutCmd(quietApp()), "--config", writeYAML(t, base), "--out", ro, "--prompts", "4"); err != nil {
		t.Fatal(err)
	}
	type cost struct{ Judged, Calls, PromptTokens, CompletionTokens float64 }
	measure := func(extra string) cost {
		out := t.TempDir()
		if _, err := run(t, newScoreCmd(quietApp()), "--config", writeYAML(t, base+extra), "--in", filepath.Join(ro, "rollouts.parquet"), "--out", out); err != nil {
			t.Fatal(err)
		}
		var sum struct {
			Judge cost `json:"judge"`
		}
		readJSON(t, filepath.Join(out, "score-summary.json"), &sum)
		return sum.Judge
	}
	point := measure("")
	group := measure("  mode: group\n")
	checked := measure("  mode: group\n  position_check: 0.25\n")
	for _, c := range []struct {
		name string
		c    cost
	}{{"pointwise", point}, {"group", group}, {"group, position_check 0.25", checked}} {
		t.Logf("%-27s judged %2.0f  calls %2.0f  prompt tokens %6.0f  completion tokens %5.0f  (per rollout: %.0f prompt, %.0f completion)",
			c.name, c.c.Judged, c.c.Calls, c.c.PromptTokens, c.c.CompletionTokens, c.c.PromptTokens/c.c.Judged, c.c.CompletionTokens/c.c.Judged)
	}
	if point.Judged != 32 || group.Judged != 32 || point.Calls != 32 || group.Calls != 4 || checked.Calls < 4 || checked.Calls > 8 {
		t.Errorf("pointwise %+v, group %+v, checked %+v: want 32 judged, in 32 calls pointwise, 4 in group mode, 4 to 8 checked", point, group, checked)
	}
	if group.PromptTokens >= point.PromptTokens {
		t.Errorf("group mode sent %v prompt tokens, pointwise %v: the rubric is sent once per group, so fewer", group.PromptTokens, point.PromptTokens)
	}
}
