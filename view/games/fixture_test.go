package games_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/league"
	_ "github.com/parleyhq/parley/rollout/games" // every built-in game, as cmd/parley registers them
	"github.com/parleyhq/parley/sim"
)

// fixture is one directory holding every kind of game output, made by
// the commands' own code against serve-sim: a tournament (seed 001), a
// series output (seed 002), a run with a league and its cross-play, and
// the same run's held-out evaluations.
type fixture struct {
	Root, Tournament, Series, Run string
	// Pairwise is the eval pairwise details file.
	Pairwise string
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
	fixDirs []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range fixDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// shared makes the fixture once for the package's tests; each test that
// edits files copies what it edits.
func shared(t *testing.T) fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = makeFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

func makeFixture() (fixture, error) {
	root, err := os.MkdirTemp("", "parley-view-games-")
	if err != nil {
		return fixture{}, err
	}
	fixDirs = append(fixDirs, root)
	games, err := app.SimGames(nil)
	if err != nil {
		return fixture{}, err
	}
	srv, err := sim.New(sim.Options{Games: games})
	if err != nil {
		return fixture{}, err
	}
	ts := httptest.NewServer(srv.Handler())
	defer srv.Close()
	defer ts.Close()
	url := ts.URL
	f := fixture{Root: root, Tournament: filepath.Join(root, "tour"), Series: filepath.Join(root, "ser"), Run: filepath.Join(root, "run")}
	ctx := context.Background()

	// Seed 001's tournament: four scripted agents, one round.
	spec, err := config.ParseTournament([]byte(tournamentYAML(url)))
	if err != nil {
		return f, err
	}
	if _, err := app.Tournament(ctx, spec, app.TournamentOptions{Dir: f.Tournament}); err != nil {
		return f, fmt.Errorf("tournament: %w", err)
	}
	// Seed 002's series: one series per condition, two games each.
	cfg, err := config.Parse([]byte(fmt.Sprintf(seriesYAML, url)))
	if err != nil {
		return f, err
	}
	if _, err := app.Series(ctx, cfg, app.Env{}, f.Series, 1); err != nil {
		return f, fmt.Errorf("series: %w", err)
	}
	// A league run: checkpoints 1–4, the league's file, its cross-play.
	rd := dataset.RunDir(f.Run)
	if err := rd.Create(); err != nil {
		return f, err
	}
	if err := os.WriteFile(rd.ConfigPath(), []byte(fmt.Sprintf(leagueYAML, url, url)), 0o644); err != nil {
		return f, err
	}
	for s := 1; s <= 4; s++ {
		ck := rd.CheckpointDir(s)
		os.MkdirAll(ck, 0o755)
		os.WriteFile(filepath.Join(ck, "adapter_config.json"), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(ck, "adapter_model.safetensors"), []byte("w"), 0o644)
		if err := handshake.WriteDone(ck, handshake.Done{Step: s}); err != nil {
			return f, err
		}
	}
	lg := league.New("xp", []string{"requester"})
	r := lg.Roles[0]
	r.History = []league.Point{{Step: 1, R: 1500, RD: 350}, {Step: 2, R: 1540, RD: 260}, {Step: 3, R: 1575, RD: 180}, {Step: 4, R: 1600, RD: 120}}
	r.Trained.R, r.Trained.RD = 1600, 120
	r.Members = []league.Member{
		{ID: league.FrozenID(0), Kind: "frozen", Rating: statsRating(1450, 90), Games: 12},
		{ID: league.SnapshotID(2), Kind: "snapshot", Version: 2, JoinedStep: 2, Rating: statsRating(1530, 150), Games: 6},
	}
	for s := 2; s <= 4; s += 2 {
		// The members' ratings move between the kept files.
		r.Members[0].Rating.R, r.Members[0].Rating.RD = 1400+25*float64(s), 200-25*float64(s)
		if err := league.Save(rd.LeaguePath(s), lg); err != nil {
			return f, err
		}
	}
	if _, _, err := app.LeagueCrossPlay(ctx, app.CrossPlayOptions{Run: f.Run, Endpoint: url, Concurrency: 4}); err != nil {
		return f, fmt.Errorf("league crossplay: %w", err)
	}
	// Held-out evaluations at steps 2 and 4 (RUN/evals/step-N.json, as
	// harness.EvalResult writes them).
	for _, s := range []int{2, 4} {
		ev := harness.EvalResult{EvalSetup: report.EvalSetup{Step: s, Base: "sim-policy", Set: "heldout", Prompts: 2, Judge: "sim-judge"},
			Adapter: fmt.Sprintf("xp-step-%06d", s)}
		ev.Result.Runs = []report.PairwiseRun{{WinRate: 0.25 * float64(s/2), Wins: s / 2, Losses: 4 - s/2}}
		for i, p := range []string{"dilemma-01", "dilemma-02"} {
			ev.Comparisons = append(ev.Comparisons, harness.Comparison{Aspect: "ca", Index: i, PromptID: p,
				LeftWins: s / 2, RightWins: 2 - s/2, Outcome: float64(s/2) / 2,
				LeftFinal: fmt.Sprintf("step %d's answer to %s", s, p), RightFinal: "the base's answer to " + p,
				LeftFirstRationale: "left first: A is more concrete", RightFirstRationale: "right first: B hedges"})
		}
		if err := writeJSONFile(rd.EvalPath(s), ev); err != nil {
			return f, err
		}
	}
	// `parley eval pairwise`: an adapter against the base on two
	// conflict-resolution prompts, its details and results files.
	pw := filepath.Join(root, "pw")
	pcfg, err := config.Parse([]byte(fmt.Sprintf(pairwiseYAML, filepath.Join(root, "runs"), url, url+"/v1")))
	if err != nil {
		return f, err
	}
	if err := app.Pairwise(ctx, pcfg, app.Env{}, app.PairwiseOptions{Left: "adapter:ca-lora=/adapters/ca", Right: "base", Set: "conflict",
		Runs: 1, Prompts: 2, Decodings: []string{"greedy"}, Out: filepath.Join(pw, "pairwise.json"), Details: filepath.Join(pw, "details.jsonl")}); err != nil {
		return f, fmt.Errorf("eval pairwise: %w", err)
	}
	f.Pairwise = filepath.Join(pw, "details.jsonl")
	return f, nil
}

const pairwiseYAML = `run: {name: evaltest, dir: %s, seed: 3}
policy: {endpoints: [%q], model: sim-policy, request_timeout: 20s}
sampling: {temperature: 1.0, top_p: 1.0, max_tokens: 48, final_max_tokens: 64}
game: {env: deliberation, deliberation: {max_rounds: 3}}
rollout: {group_size: 1, concurrency: 8}
judge: {kind: ca, base_url: %q, model: sim-judge, api_key_env: "", concurrency: 8, timeout: 20s}
log: {level: error}
`

func tournamentYAML(url string) string {
	y := fmt.Sprintf(`seed: 3
rounds: 1
concurrency: 4
max_attempts: 2
retry_wait: 1ms
request_timeout: 5s
max_retries: 1
judge: {base_url: %s/v1, model: sim-judge, max_retries: 1, concurrency: 8}
sampling: {temperature: 1, max_tokens: 200}
analysis: {bootstrap: 50, splits: 50, audit_draws: 20, elo_permutations: 50}
agents:
`, url)
	for _, a := range []string{"stingy-g5-p20", "firm-g25-p80", "soft-g70-p40", "open-g95-p90"} {
		y += fmt.Sprintf("  - {name: %s, endpoint: %s, model: sim-policy, adapter: %s, adapter_path: /sim/%s, max_concurrent: 8, family: sim}\n", a, url, a, a)
	}
	return y
}

const seriesYAML = `run: {name: series-test, seed: 11}
policy: {endpoints: [%q], model: sim-policy}
sampling: {temperature: 1, top_p: 1, max_tokens: 64, final_max_tokens: 64}
game:
  env: multiparty
  multiparty:
    max_rounds: 3
    series_length: 3
    trust: {method: brs, condition: s_p, lambda: 0.7, gamma: 0.9, prior: 0.5}
    scripted: [hb1, hb2, g2, adversary]
curriculum: {path: builtin:2hb2g}
rollout: {group_size: 1, prompts_per_step: 1, concurrency: 4}
judge: {kind: game}
`

const leagueYAML = `run: {name: xp, seed: 3}
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
