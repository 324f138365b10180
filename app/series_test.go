package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
)

// seriesConfig is a multiparty config on serve-sim at url: one party
// played by the policy, the others scripted, two games a series.
func seriesConfig(t *testing.T, url string) config.Config {
	t.Helper()
	y := fmt.Sprintf(`run: {name: series-test, seed: 11}
policy: {endpoints: [%q], model: sim-policy}
sampling: {temperature: 1, top_p: 1, max_tokens: 64, final_max_tokens: 64}
game:
  env: multiparty
  multiparty:
    max_rounds: 3
    series_length: 2
    trust: {method: brs, condition: s_p, lambda: 0.7, gamma: 0.9, prior: 0.5}
    scripted: [hb1, hb2, g2, adversary]
curriculum: {path: builtin:2hb2g}
rollout: {group_size: 1, prompts_per_step: 1, concurrency: 4}
judge: {kind: game}
`, url)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, y)
	}
	return cfg
}

// TestSeriesCommand: `parley series` freezes the config into OUT, plays
// each series' games in order, and run again finds them all recorded.
func TestSeriesCommand(t *testing.T) {
	cfg := seriesConfig(t, startAllSim(t))
	out := t.TempDir()
	sum, err := Series(context.Background(), cfg, Env{}, out, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Played == 0 || sum.Failed != 0 || sum.Played%2 != 0 {
		t.Fatalf("summary %+v: want whole series of two games played, none failed", sum)
	}
	frozen, err := os.ReadFile(dataset.RunDir(out).ConfigPath())
	if err != nil || !strings.Contains(string(frozen), "series-test") {
		t.Errorf("config.yaml (%v) is not the run's:\n%s", err, frozen)
	}
	if _, err := os.Stat(filepath.Join(out, "series")); err != nil {
		t.Errorf("no series folder: %v", err)
	}
	again, err := Series(context.Background(), cfg, Env{}, out, 1)
	if err != nil || again.Played != 0 || again.Resumed != sum.Played {
		t.Errorf("run again: %+v (%v), want the %d games found recorded and none played", again, err, sum.Played)
	}
}
