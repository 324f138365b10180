package view_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/handshake"
	_ "github.com/parleyhq/parley/rollout/games" // every built-in game, as cmd/parley registers them
	"github.com/parleyhq/parley/sim"
)

// runConfig is a short training run of the deliberation game on
// serve-sim: persona B is a league of the policy's snapshots, a rule judge
// scores the finals, and the trainer is the test's (fakeTrainer).
const runConfig = `run: {name: viewrun, dir: %q, seed: 5}
policy: {endpoints: [%s], model: sim-policy}
sampling: {max_tokens: 24, final_max_tokens: 32, temperature: 1}
game: {env: deliberation, deliberation: {max_rounds: 2}}
curriculum: {path: builtin:dilemmas}
rollout: {group_size: 3, prompts_per_step: 3, concurrency: 8}
judge: {kind: rule, rule: {kind: keyword_share, keywords: [together, shared, everyone, involved, mutual, both]}, base_url: %s/v1}
grpo: {mask: dialogue+final}
train: {steps: 3, max_staleness: 0, handshake: file, trainer_timeout: 2m}
trainer: {model: %q}
roles:
  B:
    policy: league
    league: {snapshot_every: 2}
`

// tinyModel is the repository's tiny model folder (make tiny-model), or
// "" when it is not there.
func tinyModel() string {
	dir, _ := os.Getwd()
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, "models", "tiny")
		if _, err := os.Stat(filepath.Join(p, "tokenizer.json")); err == nil {
			return p
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
)

// trainedRun makes, once per test binary, a 3-step training run on
// serve-sim (speaking the tiny model's tokenizer when models/tiny is
// there) with a trainer that writes an adapter and DONE for each batch,
// and a parley rollout output of the same config; it returns the folder
// holding both (run/ and rollout/).
func trainedRun(t *testing.T) (runDir, rolloutDir string) {
	t.Helper()
	fixtureOnce.Do(func() { fixtureDir, fixtureErr = makeFixture() })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return filepath.Join(fixtureDir, "viewrun"), filepath.Join(fixtureDir, "rollout")
}

func makeFixture() (string, error) {
	dir, err := os.MkdirTemp("", "parley-view-test-")
	if err != nil {
		return "", err
	}
	model := tinyModel()
	srv, err := sim.New(sim.Options{Tokenizer: model})
	if err != nil {
		return "", err
	}
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.Close(); srv.Close() }()
	if model == "" {
		model = filepath.Join(dir, "no-model")
	}
	cfg, err := config.Parse(fmt.Appendf(nil, runConfig, dir, ts.URL, ts.URL, model))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	go fakeTrainer(ctx, dataset.RunDir(cfg.RunDir()))
	if err := app.Train(ctx, cfg, app.Env{}, app.TrainOptions{}); err != nil {
		return "", fmt.Errorf("the fixture's training run: %w", err)
	}
	if err := app.Rollout(ctx, cfg, app.Env{}, app.RolloutOptions{Out: filepath.Join(dir, "rollout"), Prompts: 2}); err != nil {
		return "", fmt.Errorf("the fixture's rollout output: %w", err)
	}
	return dir, nil
}

// fakeTrainer plays the trainer of the file handshake: for each verified
// batch, an adapter and DONE.
func fakeTrainer(ctx context.Context, dir dataset.RunDir) {
	step := 1
	for ctx.Err() == nil {
		if _, err := dataset.VerifyBatch(dir.BatchPath(step), step); err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		ck := dir.CheckpointDir(step)
		_ = os.MkdirAll(ck, 0o755)
		_ = os.WriteFile(filepath.Join(ck, "adapter_config.json"), []byte("{}"), 0o644)
		_ = os.WriteFile(filepath.Join(ck, "adapter_model.safetensors"), []byte("weights"), 0o644)
		_ = handshake.WriteDone(ck, handshake.Done{Step: step, Metrics: map[string]float64{"loss": 1 / float64(step), "approx_kl": 0.01 * float64(step)}})
		step++
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}
