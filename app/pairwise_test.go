package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
)

// pairwiseConfig is a deliberation config on serve-sim at url: its
// agents and its CA judge.
func pairwiseConfig(t *testing.T, url, judgeKind string) config.Config {
	t.Helper()
	judge := fmt.Sprintf("{kind: ca, base_url: %s/v1, model: sim-judge, api_key_env: \"\", max_retries: 1}", url)
	if judgeKind != "ca" {
		judge = "{kind: rule, rule: {kind: length, target_length: 10}}"
	}
	y := fmt.Sprintf(`run: {name: pairwise-test, seed: 5}
policy: {endpoints: [%q], model: sim-policy}
sampling: {temperature: 1, top_p: 1, max_tokens: 64, final_max_tokens: 96}
game: {env: deliberation, deliberation: {max_rounds: 2}}
curriculum: {path: builtin:dilemmas}
rollout: {group_size: 2, prompts_per_step: 2, concurrency: 8}
judge: %s
`, url, judge)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, y)
	}
	return cfg
}

// TestPairwiseCommand: `parley eval pairwise` plays both sides on the
// conflict set and judges their finals in both orders, printing a table
// and writing the results and the comparisons; the files are kept
// without --force.
func TestPairwiseCommand(t *testing.T) {
	url := startAllSim(t)
	cfg := pairwiseConfig(t, url, "ca")
	dir := t.TempDir()
	fl := PairwiseOptions{Left: "base", Right: "adapter:rival=/sim/rival", Set: "conflict", Prompts: 2, Runs: 1,
		Decodings: []string{"greedy"}, Aspects: []string{"ca"}, Out: filepath.Join(dir, "results.json"), Details: filepath.Join(dir, "details.jsonl")}
	var printed bytes.Buffer
	if err := Pairwise(context.Background(), cfg, Env{Out: &printed}, fl); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fl.Out)
	if err != nil {
		t.Fatal(err)
	}
	var results []map[string]any
	if err := json.Unmarshal(b, &results); err != nil || len(results) == 0 {
		t.Fatalf("results.json: %v, %d results:\n%s", err, len(results), b)
	}
	if d, err := os.ReadFile(fl.Details); err != nil || len(bytes.TrimSpace(d)) == 0 {
		t.Errorf("details.jsonl: %v, %d bytes", err, len(d))
	}
	// The header names both sides, their games and the prompts drawn.
	for _, w := range []string{"base (deliberation) vs. rival (deliberation)", "2 prompts"} {
		if !strings.Contains(printed.String(), w) {
			t.Errorf("the printed table lacks %q:\n%s", w, printed.String())
		}
	}
	if err := Pairwise(context.Background(), cfg, Env{}, fl); err == nil {
		t.Error("a second run replaced the results without --force")
	}
}

// TestPairwiseRefuses: the set, the judge and the sides are checked first.
func TestPairwiseRefuses(t *testing.T) {
	url := startAllSim(t)
	for _, tt := range []struct {
		name, judge string
		fl          PairwiseOptions
		want        string
	}{
		{"unknown set", "ca", PairwiseOptions{Left: "base", Right: "adapter:x", Set: "nope"}, `eval pairwise: --set "nope": want one of `},
		{"unknown aspect", "ca", PairwiseOptions{Left: "base", Right: "adapter:x", Set: "conflict", Aspects: []string{"taste"}}, `eval pairwise: --aspect "taste": want `},
		{"a rule judge", "rule", PairwiseOptions{Left: "base", Right: "adapter:x", Set: "conflict"}, "pairwise comparison needs an LLM judge"},
		{"one name", "ca", PairwiseOptions{Left: "base", Right: "base", Set: "conflict", Runs: 1, Decodings: []string{"greedy"}}, `both sides are named "base"`},
		{"a bad side", "ca", PairwiseOptions{Left: "nonsense:", Right: "base", Set: "conflict", Runs: 1, Decodings: []string{"greedy"}}, "eval pairwise: --left: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Pairwise(context.Background(), pairwiseConfig(t, url, tt.judge), Env{}, tt.fl)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Pairwise() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
