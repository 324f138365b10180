package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
	"go.uber.org/zap"
)

// rolloutConfig is a run config of the endowment game on serve-sim at url
// (policy and ledger judge), two holder turns.
func rolloutConfig(t *testing.T, url string, seed int) config.Config {
	t.Helper()
	y := fmt.Sprintf(`run: {name: rollout-test, seed: %d}
policy: {endpoints: [%q], model: sim-policy}
sampling: {temperature: 1, top_p: 1, max_tokens: 200, final_max_tokens: 16}
game:
  env: endowment
  endowment: {max_turns: 2, endowment: 100}
curriculum: {path: builtin:endowment}
rollout: {group_size: 2, prompts_per_step: 2, concurrency: 4}
judge: {kind: game, base_url: %s/v1, model: sim-judge, api_key_env: ""}
`, seed, url, url)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, y)
	}
	return cfg
}

// TestRolloutCommand plays `parley rollout` on serve-sim: two prompts of
// two rollouts each into OUT/rollouts.parquet with OUT/summary.json; the
// same command again resumes (finding every rollout done); another seed
// is refused as another job's, and --force replaces the output.
func TestRolloutCommand(t *testing.T) {
	url := startSim(t, sim.Options{})
	out := filepath.Join(t.TempDir(), "out")
	ctx := context.Background()
	var tables []*summary.Table
	env := Env{Summarize: func(tb *summary.Table) { tables = append(tables, tb) }}
	opts := RolloutOptions{Out: out, Prompts: 2}

	if err := Rollout(ctx, rolloutConfig(t, url, 7), env, opts); err != nil {
		t.Fatal(err)
	}
	rs, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d rollouts, want 2 prompts × 2", len(rs))
	}
	for _, r := range rs {
		if r.Env != endowment.Name || r.Failed {
			t.Errorf("rollout %s: game %q, failed %v (%s)", r.RolloutID, r.Env, r.Failed, r.Error)
		}
		if _, err := endowment.RolloutOutcome(&r); err != nil {
			t.Errorf("rollout %s: %v", r.RolloutID, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct{ Rollouts, Failed int }
	if err := json.Unmarshal(b, &sum); err != nil || sum.Rollouts != 4 || sum.Failed != 0 {
		t.Errorf("summary.json: %s (%v), want 4 rollouts, none failed", b, err)
	}
	if len(tables) != 1 {
		t.Errorf("%d closing summaries, want 1", len(tables))
	}

	// The same command resumes: every rollout is there, none is played again.
	if err := Rollout(ctx, rolloutConfig(t, url, 7), env, opts); err != nil {
		t.Fatalf("resume: %v", err)
	}
	again, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
	if err != nil || len(again) != 4 {
		t.Fatalf("after resuming: %d rollouts (%v), want the same 4", len(again), err)
	}

	// Another seed is another job (it draws other rows and seeds them
	// otherwise): refused, the file kept.
	err = Rollout(ctx, rolloutConfig(t, url, 8), env, opts)
	if err == nil || !strings.Contains(err.Error(), "holds rollouts of another job") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("another seed: %v, want it refused as another job's", err)
	}
	// --force replaces them.
	opts.Force = true
	if err := Rollout(ctx, rolloutConfig(t, url, 8), env, opts); err != nil {
		t.Fatalf("--force: %v", err)
	}
	forced, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
	if err != nil || len(forced) != 4 || forced[0].Seed == rs[0].Seed {
		t.Errorf("after --force: %d rollouts (%v), first seed %d (was %d): want 4 new ones", len(forced), err, forced[0].Seed, rs[0].Seed)
	}
}

// TestRolloutRefuses: `parley rollout` needs --out, and a policy server
// that answers.
func TestRolloutRefuses(t *testing.T) {
	url := startSim(t, sim.Options{})
	ctx := context.Background()
	if err := Rollout(ctx, rolloutConfig(t, url, 7), Env{}, RolloutOptions{}); err == nil || !strings.Contains(err.Error(), "--out DIR is required") {
		t.Errorf("no --out: %v", err)
	}
	dead := deadURL(t)
	err := Rollout(ctx, rolloutConfig(t, dead, 7), Env{}, RolloutOptions{Out: t.TempDir()})
	if err == nil || !strings.HasPrefix(err.Error(), "rollout: ") || !strings.Contains(err.Error(), strings.TrimPrefix(dead, "http://")) {
		t.Errorf("policy down: %v, want a preflight error naming %s", err, dead)
	}
}

// TestCheckResume: what an interrupted run left is this job's only when
// every rollout is one of this run's (group, index) slots, with the row's
// prompt, the game and the seed this run derives, once each.
func TestCheckResume(t *testing.T) {
	url := startSim(t, sim.Options{})
	out := t.TempDir()
	cfg := rolloutConfig(t, url, 7)
	if err := Rollout(context.Background(), cfg, Env{}, RolloutOptions{Out: out, Prompts: 2}); err != nil {
		t.Fatal(err)
	}
	done, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := newPolicy(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer policy.Close()
	ro, closePlayers, err := runnerOptions(cfg, policy, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closePlayers()
	// The rows the command played, in group order.
	var sel []dataset.Prompt
	for g := 0; g < 2; g++ {
		for _, r := range done {
			if r.GroupID == rollout.GroupID(ro.Step, g) {
				sel = append(sel, dataset.Prompt{ID: r.PromptID})
				break
			}
		}
	}
	if len(sel) != 2 {
		t.Fatalf("fixture: %d of 2 groups played", len(sel))
	}
	for _, tt := range []struct {
		name   string
		change func([]dataset.Rollout) []dataset.Rollout
		want   string
	}{
		{"as written", func(rs []dataset.Rollout) []dataset.Rollout { return rs }, ""},
		{"none", func([]dataset.Rollout) []dataset.Rollout { return nil }, ""},
		{"an index past the group", func(rs []dataset.Rollout) []dataset.Rollout { rs[0].Index = 2; return rs }, "is not one of 2 prompts × 2"},
		{"another group", func(rs []dataset.Rollout) []dataset.Rollout { rs[0].GroupID = "elsewhere"; return rs }, "is not one of 2 prompts × 2"},
		{"another prompt", func(rs []dataset.Rollout) []dataset.Rollout { rs[0].PromptID = "other-row"; return rs }, "plays prompt other-row"},
		{"another game", func(rs []dataset.Rollout) []dataset.Rollout { rs[0].Env = "multiparty"; return rs }, "plays game multiparty, this run endowment"},
		{"another seed", func(rs []dataset.Rollout) []dataset.Rollout { rs[0].Seed++; return rs }, "was seeded otherwise"},
		{"twice", func(rs []dataset.Rollout) []dataset.Rollout { return append(rs, rs[0]) }, "is there twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := tt.change(append([]dataset.Rollout(nil), done...))
			err := checkResume(rs, sel, ro)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("checkResume() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("checkResume() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestScoreCommand plays rollouts, then `parley score` judges them with
// the game's scorer (judge.kind game: the ledger's share), computes the
// advantages and writes the batch; --in and --out are required, and a
// batch already written is kept without --force.
func TestScoreCommand(t *testing.T) {
	// A holder that concedes half the time (g50), so that shares vary
	// within a group and the advantages are not all zero.
	const model = "agent-g50-p90"
	url := startSim(t, sim.Options{Model: model})
	ctx := context.Background()
	cfg := rolloutConfig(t, url, 7)
	cfg.Policy.Model = model
	played := t.TempDir()
	if err := Rollout(ctx, cfg, Env{}, RolloutOptions{Out: played, Prompts: 2, GroupSize: 4}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(played, "rollouts.parquet")
	if err := Score(ctx, cfg, Env{}, ScoreOptions{In: in}); err == nil || !strings.Contains(err.Error(), "--in and --out are required") {
		t.Errorf("no --out: %v", err)
	}
	if err := Score(ctx, cfg, Env{}, ScoreOptions{In: filepath.Join(played, "none.parquet"), Out: t.TempDir()}); err == nil || !strings.HasPrefix(err.Error(), "score: --in: ") {
		t.Errorf("a missing --in: %v", err)
	}
	out := t.TempDir()
	var tables []*summary.Table
	env := Env{Summarize: func(tb *summary.Table) { tables = append(tables, tb) }}
	if err := Score(ctx, cfg, env, ScoreOptions{In: in, Out: out, Step: -1, PolicyVersion: -1}); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 {
		t.Errorf("%d closing summaries, want 1", len(tables))
	}
	batches, err := filepath.Glob(filepath.Join(out, "batches", "*"))
	if err != nil || len(batches) == 0 {
		t.Fatalf("no batch under %s/batches (%v)", out, err)
	}
	if err := Score(ctx, cfg, env, ScoreOptions{In: in, Out: out, Step: -1, PolicyVersion: -1}); err == nil {
		t.Error("scoring again into the same folder replaced the batch without --force")
	}
	if err := Score(ctx, cfg, env, ScoreOptions{In: in, Out: out, Step: -1, PolicyVersion: -1, Force: true}); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// TestSeriesRefuses: `parley series` needs --out and a game that lays out
// series.
func TestSeriesRefuses(t *testing.T) {
	cfg := rolloutConfig(t, deadURL(t), 7)
	if _, err := Series(context.Background(), cfg, Env{}, "", 1); err == nil || !strings.Contains(err.Error(), "--out DIR is required") {
		t.Errorf("no --out: %v", err)
	}
	if _, err := Series(context.Background(), cfg, Env{}, t.TempDir(), 1); err == nil || !strings.Contains(err.Error(), "the endowment game lays out no series") {
		t.Errorf("endowment: %v", err)
	}
}
