package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/internal/toygame"
)

// TestToyGameThroughItsPackage: a game that is only its own package
// (internal/toygame, registered by importing it) is evaluated pairwise on
// its own held-out set and gets its section in a run's report, with no
// line of cmd, eval or report naming it.
func TestToyGameThroughItsPackage(t *testing.T) {
	srv := startSim(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toy.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`run: {name: toy, dir: %s, seed: 3}
policy: {endpoints: [%q], model: sim-policy, request_timeout: 20s}
sampling: {max_tokens: 16, final_max_tokens: 16}
game: {env: toy}
rollout: {group_size: 1, concurrency: 4}
grpo: {mask: final}
judge: {kind: ca, base_url: %q, model: sim-judge, api_key_env: "", concurrency: 4, timeout: 20s}
log: {level: error}
`, filepath.Join(dir, "runs"), srv.URL, srv.URL+"/v1")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pairwise.json")
	stdout, err := run(t, newEvalCmd(quietApp()), "pairwise", "--config", cfg, "--left", "adapter:ca=/adapters/ca", "--right", "base",
		"--runs", "1", "--prompts", "2", "--decoding", "greedy", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	evals, err := report.ReadEvalFiles([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	if len(evals.Pairwise) != 1 || evals.Pairwise[0].Set != toygame.EvalSet.Label || !strings.Contains(stdout, "(toy)") {
		t.Errorf("eval pairwise on the toy set: %+v\n%s", evals.Pairwise, stdout)
	}

	// A run directory of the toy game: its report holds the game's section.
	rd := dataset.RunDir(filepath.Join(dir, "runs", "toy"))
	if err := os.MkdirAll(rd.RolloutsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rd.ConfigPath(), []byte("game: {env: toy}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := dataset.NewRolloutWriter(rd.RolloutsPath(1), dataset.RolloutWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, total := range []int{4, 6} {
		if err := w.Write(dataset.Rollout{RunID: "toy", Env: toygame.Name, Step: 1, RolloutID: fmt.Sprint(i), Outcome: fmt.Sprintf(`{"total":%d,"games":1}`, total)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, newReportCmd(quietApp()), string(rd)); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(string(rd), "report", report.ReportFile))
	if !strings.Contains(string(md), "## The toy game") || !strings.Contains(string(md), "| 1 | 2 | 5.00 |") {
		t.Errorf("the toy run's report lacks the game's section:\n%s", md)
	}
}
