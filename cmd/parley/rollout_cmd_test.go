package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
	"go.uber.org/zap"
)

func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRolloutInterrupted cancels `parley rollout` (as Ctrl-C does) in the
// middle of a run: the file it leaves is valid and holds exactly the
// rollouts that finished, as the summary says.
func TestRolloutInterrupted(t *testing.T) {
	srv, err := sim.New(sim.Options{LatencyMedian: 20 * time.Millisecond, LatencySigma: 0.3, Games: mustSimGames(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	cfg := writeYAML(t, fmt.Sprintf("policy:\n  endpoints: [%q]\nrollout:\n  group_size: 8\n  concurrency: 8\njudge:\n  kind: rule\n  rule: {kind: agreement}\n", ts.URL))
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(1500 * time.Millisecond); cancel() }()
	cmd := newRolloutCmd(quietApp())
	cmd.SetArgs([]string{"--config", cfg, "--out", out, "--prompts", "16"})
	err = cmd.ExecuteContext(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("rollout after cancel = %v, want context.Canceled", err)
	}
	rs, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
	if err != nil {
		t.Fatalf("the interrupted run left no valid file: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum rollout.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || len(rs) >= 128 || len(rs) != sum.Rollouts || sum.Interrupted != 128-len(rs) {
		t.Errorf("file holds %d rollouts; summary %d written, %d interrupted (of 128)", len(rs), sum.Rollouts, sum.Interrupted)
	}
	for _, r := range rs {
		if r.Failed || len(r.Sequences) == 0 || r.Final == "" {
			t.Errorf("rollout %s in the file is not a finished rollout", r.RolloutID)
		}
	}
}

// TestRolloutResumes: `parley rollout` into a folder an interrupted run
// left (part of the rollouts) plays only the rest, and ends with the
// rollouts an uninterrupted run writes; a folder of another job is refused
// without --force.
func TestRolloutResumes(t *testing.T) {
	srv, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	cfg := writeYAML(t, fmt.Sprintf("policy:\n  endpoints: [%q]\nrollout:\n  group_size: 4\n  concurrency: 4\njudge:\n  kind: rule\n  rule: {kind: agreement}\n", ts.URL))
	run := func(out string, extra ...string) error {
		cmd := newRolloutCmd(quietApp())
		cmd.SetArgs(append([]string{"--config", cfg, "--out", out, "--prompts", "3"}, extra...))
		return cmd.ExecuteContext(context.Background())
	}
	read := func(out string) map[string]string {
		rs, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range rs {
			m[r.RolloutID] = fmt.Sprintf("%s %d %s %v", r.PromptID, r.Seed, r.Final, r.Failed)
		}
		return m
	}
	whole := t.TempDir()
	if err := run(whole); err != nil {
		t.Fatal(err)
	}
	want := read(whole)
	all, _ := dataset.ReadAllRollouts(filepath.Join(whole, "rollouts.parquet"))
	if len(all) != 12 {
		t.Fatalf("%d rollouts, want 12", len(all))
	}

	// What an interrupted run leaves: 5 of the 12 rollouts.
	part := t.TempDir()
	w, err := dataset.NewRolloutWriter(filepath.Join(part, "rollouts.parquet"), dataset.RolloutWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all[:5] {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := run(part); err != nil {
		t.Fatalf("resumed rollout = %v", err)
	}
	if got := read(part); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed run wrote\n%v\nwant\n%v", got, want)
	}
	b, _ := os.ReadFile(filepath.Join(part, "summary.json"))
	var sum rollout.Summary
	if err := json.Unmarshal(b, &sum); err != nil || sum.Rollouts != 12 || sum.Resumed != 5 || sum.Interrupted != 0 {
		t.Errorf("summary %+v (%v), want 12 rollouts, 5 resumed", sum, err)
	}

	// Another job's rollouts (another seed) are refused, and --force replaces them.
	if err := run(part, "--run.seed=99"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("rollout with another seed into a used folder = %v, want a refusal naming --force", err)
	}
	if err := run(part, "--run.seed=99", "--force"); err != nil {
		t.Errorf("--force = %v", err)
	}
}

// twoRefusals answers the policy's completion requests alternately with
// two kinds of 400, so that every rollout fails in one of two ways.
func twoRefusals(h http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != sim.PathCompletions {
			h.ServeHTTP(w, r)
			return
		}
		msg := "prompt refused: alpha"
		if n.Add(1)%2 == 0 {
			msg = "prompt refused: beta"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"object":"error","message":%q,"type":"BadRequestError","code":400}`, msg)
	})
}

// TestRolloutFailuresAggregated: rollouts failing in two ways give one
// warning per kind of error with its count, not one line per rollout, and
// a run past train.max_failed_fraction fails naming the first error.
func TestRolloutFailuresAggregated(t *testing.T) {
	url := badServer{wrap: twoRefusals}.start(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", url, url)
	a, logs := observedApp(zap.WarnLevel)
	_, err := run(t, newRolloutCmd(a), "--config", cfg, "--policy.max_retries", "0",
		"--out", filepath.Join(dir, "out"), "--prompts", "4", "--group-size", "2")
	if err == nil || !strings.Contains(err.Error(), "8 of 8 rollouts failed") || !strings.Contains(err.Error(), "prompt refused") {
		t.Fatalf("parley rollout = %v, want 8 of 8 failed with the first error", err)
	}
	counts := map[string]int{}
	for _, e := range logs.FilterMessage("rollouts failed").All() {
		cause, _ := e.ContextMap()["cause"].(string)
		n, _ := e.ContextMap()["count"].(int64)
		if _, dup := counts[cause]; dup {
			t.Errorf("two warnings for cause %q", cause)
		}
		counts[cause] = int(n)
	}
	total := 0
	for cause, n := range counts {
		if !strings.Contains(cause, "prompt refused: alpha") && !strings.Contains(cause, "prompt refused: beta") {
			t.Errorf("warning cause %q is neither kind of refusal", cause)
		}
		total += n
	}
	t.Logf("warnings: %v", counts)
	if len(counts) != 2 || total != 8 {
		t.Errorf("warnings %v, want one per kind of error (2) with counts adding to 8", counts)
	}
}
