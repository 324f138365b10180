package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/sim"
)

// endowmentLeague is a run config of the endowment game whose requester
// is a league with a scripted frozen member.
const endowmentLeague = `run: {name: xp, seed: 3}
policy: {endpoints: [%s], model: sim-policy}
sampling: {max_tokens: 200, temperature: 1}
game: {env: endowment, endowment: {max_turns: 2}}
curriculum: {path: builtin:endowment}
judge: {kind: game, base_url: %s/v1, model: sim-judge, concurrency: 8, api_key_env: ""}
grpo: {mask: dialogue}
roles:
  requester:
    policy: league
    pool: [{policy: scripted}]
    league: {snapshot_every: 2}
`

// deliberationLeague is a run config of seed 000's deliberation game
// whose persona B is a league of the policy's snapshots, scored by a rule
// judge.
const deliberationLeague = `run: {name: xp, seed: 3}
policy: {endpoints: [%s], model: sim-policy}
sampling: {max_tokens: 16, temperature: 1}
game: {env: deliberation, deliberation: {max_rounds: 2}}
curriculum: {path: builtin:dilemmas}
judge: {kind: rule, rule: {kind: keyword_share, keywords: [agree]}, base_url: %s/v1}
grpo: {mask: dialogue+final}
roles:
  B:
    policy: league
    league: {snapshot_every: 2}
`

// crossPlayRun writes a run directory of config (a format taking the
// sim's URL twice) with checkpoints at steps 1 to 4 and the league's
// file after step 4.
func crossPlayRun(t *testing.T, url, config, role string) dataset.RunDir {
	t.Helper()
	rd := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
	if err := rd.Create(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rd.ConfigPath(), []byte(fmt.Sprintf(config, url, url)), 0o644); err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 4; s++ {
		ck := rd.CheckpointDir(s)
		os.MkdirAll(ck, 0o755)
		os.WriteFile(filepath.Join(ck, "adapter_config.json"), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(ck, "adapter_model.safetensors"), []byte("w"), 0o644)
		if err := handshake.WriteDone(ck, handshake.Done{Step: s}); err != nil {
			t.Fatal(err)
		}
	}
	lg := league.New("xp", []string{role})
	lg.Roles[0].History = []league.Point{{Step: 1, R: 1500, RD: 350}, {Step: 4, R: 1600, RD: 120}}
	if err := league.Save(rd.LeaguePath(4), lg); err != nil {
		t.Fatal(err)
	}
	return rd
}

// TestLeagueCrossPlay: the base model and the checkpoints of every
// snapshot_every-th step play each other in both seats on serve-sim, the
// report is written (heatmap, ratings, worst case, cycles, the scripted
// member named as left out), and a second run resumes with nothing to play.
func TestLeagueCrossPlay(t *testing.T) {
	url := startSim(t, sim.Options{})
	rd := crossPlayRun(t, url, endowmentLeague, "requester")
	opts := CrossPlayOptions{Run: rd.Root(), Endpoint: url, Concurrency: 4}
	path, sum, err := LeagueCrossPlay(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// base, step 2, step 4: 3 pairs × 2 seat orders × 2 framings.
	if !sum.Complete || sum.Total != 12 || sum.Failed != 0 {
		t.Errorf("summary %+v, want 12 games complete, none failed", sum)
	}
	if want := filepath.Join(rd.Root(), "crossplay", "step-000004", "report.md"); path != want {
		t.Errorf("report at %s, want %s", path, want)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"12 games among 3 agents", "requester-pool0 (scripted)", "| step-000002 |", "1600 ± 235", "![cross-play](crossplay.png)", "![ratings](league-ratings.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	again, sum2, err := LeagueCrossPlay(context.Background(), opts)
	if err != nil || again != path || sum2.Resumed != 12 || sum2.Played != 0 {
		t.Errorf("second run: %s %+v %v, want all 12 resumed", again, sum2, err)
	}

	for _, tc := range []struct {
		name string
		edit func(*CrossPlayOptions)
		want string
	}{
		{"no endpoint", func(o *CrossPlayOptions) { o.Endpoint = "" }, "--endpoint is required"},
		{"no run", func(o *CrossPlayOptions) { o.Run = t.TempDir() }, "is not a run directory"},
		{"no checkpoint at the multiple", func(o *CrossPlayOptions) { o.Every = 7 }, "no finished checkpoint at a multiple of 7"},
	} {
		o := opts
		tc.edit(&o)
		if _, _, err := LeagueCrossPlay(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestLeagueCrossPlayDeliberation: seed 000's deliberation, a game
// without a scorer of its own, plays its cross-play scored by the run's
// judge (here a rule), both seats alike; the report reads the matrix as
// partners' on the judge's scale.
func TestLeagueCrossPlayDeliberation(t *testing.T) {
	url := startSim(t, sim.Options{})
	rd := crossPlayRun(t, url, deliberationLeague, "B")
	path, sum, err := LeagueCrossPlay(context.Background(), CrossPlayOptions{Run: rd.Root(), Endpoint: url, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	// base, step 2, step 4: 3 pairs × 2 seat orders.
	if !sum.Complete || sum.Total != 6 || sum.Failed != 0 {
		t.Errorf("summary %+v, want 6 games complete, none failed", sum)
	}
	recs, err := tournament.ReadRecords(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		a, b, final := r.Rollout.Role("A"), r.Rollout.Role("B"), r.Rollout.Role("final")
		if !r.Rollout.Judged || a == nil || b == nil || final == nil || !a.Scored || !b.Scored || a.Score != b.Score {
			t.Errorf("game %s: judged %v, roles %+v %+v: want both seats scored alike", r.Match.ID, r.Rollout.Judged, a, b)
			continue
		}
		if r.Rollout.JudgeModel == "" || a.Model != r.Match.Seats[0] || b.Model != r.Match.Seats[1] || final.Model != r.Match.Seats[0] {
			t.Errorf("game %s (%v): judge %q, A %s, B %s, final %s", r.Match.ID, r.Match.Seats, r.Rollout.JudgeModel, a.Model, b.Model, final.Model)
		}
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"6 games among 3 agents", "mean rule keyword_share 0–1", "best partners first", "Worst partner per agent", "| step-000004 |", "Not looked for"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
