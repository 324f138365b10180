package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadValid(t *testing.T) {
	cfg, err := Load("testdata/valid.yaml", nil)
	if err != nil {
		t.Fatalf("Load(valid) = %v", err)
	}
	if cfg.Run.Seed != 7 || cfg.Game.MaxRounds != 4 || len(cfg.Policy.Endpoints) != 2 || cfg.Rollout.GroupSize != 4 {
		t.Errorf("Load(valid) = %+v", cfg)
	}
	// defaults survive where the file is silent
	if cfg.Sampling.MaxTokens != Default().Sampling.MaxTokens {
		t.Errorf("sampling.max_tokens = %d, want default %d", cfg.Sampling.MaxTokens, Default().Sampling.MaxTokens)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown top key", "bogus: 1\n", []string{"line 1", `unknown key "bogus"`}},
		{"unknown nested key", "run:\n  name: x\n  sed: 3\n", []string{"line 3", `unknown key "run.sed"`, "seed"}},
		{"unknown deep key", "judge:\n  rule:\n    kinds: x\n", []string{`unknown key "judge.rule.kinds"`}},
		{"wrong type int", "game:\n  max_rounds: many\n", []string{"line 2", "many"}},
		{"wrong type list", "policy:\n  endpoints: 5\n", []string{"line 2"}},
		{"bad yaml", "run: [\n", []string{"invalid YAML"}},
		{"out of range rounds", "game:\n  max_rounds: 0\n", []string{"key game.max_rounds", "[1, 100]"}},
		{"out of range temperature", "sampling:\n  temperature: -1\n", []string{"key sampling.temperature"}},
		{"bad enum env", "game:\n  env: chess\n", []string{"key game.env", "chess", "deliberation"}},
		{"bad enum mask", "grpo:\n  mask: all\n", []string{"key grpo.mask"}},
		{"bad endpoint", "policy:\n  endpoints: [\"localhost:8000\"]\n", []string{"key policy.endpoints[0]"}},
		{"secret in env field", "judge:\n  api_key_env: sk-abc123-secret\n", []string{"key judge.api_key_env", "environment"}},
		{"single with dialogue mask", "game:\n  env: single\ngrpo:\n  mask: dialogue\n", []string{"key grpo.mask", "single-agent"}},
		{"staleness 2", "train:\n  max_staleness: 2\n", []string{"key train.max_staleness"}},
		{"bad mix category", "curriculum:\n  mix:\n    sports: 1\n", []string{"curriculum.mix.sports"}},
		{"negative group", "rollout:\n  group_size: -2\n", []string{"key rollout.group_size"}},
		{"bad duration", "policy:\n  request_timeout: soon\n", []string{"line 2", "soon"}},
		{"rule without keywords", "judge:\n  kind: rule\n  rule:\n    kind: keywords\n", []string{"key judge.rule.keywords"}},
		{"negative tis cap", "trainer:\n  tis_cap: -1\n", []string{"key trainer.tis_cap", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.body)
			_, err := Load(p, nil)
			if err == nil {
				t.Fatalf("Load(%q) = nil error, want %q", tc.body, tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, p) {
				t.Errorf("Load(%q) error %q does not name the file", tc.body, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Load(%q) error = %q, want it to contain %q", tc.body, msg, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("Load(missing) = %v, want an error naming the file", err)
	}
}

func TestOverrides(t *testing.T) {
	t.Setenv("PARLEY_RUN_SEED", "99")
	t.Setenv("PARLEY_POLICY_ENDPOINTS", "http://a:1, http://b:2")
	t.Setenv("PARLEY_POLICY_REQUEST_TIMEOUT", "3s")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse([]string{"--game.max_rounds=9", "--run.seed=5"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load("testdata/valid.yaml", fs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Run.Seed != 5 {
		t.Errorf("run.seed = %d, want 5 (flag beats env and file)", cfg.Run.Seed)
	}
	if cfg.Game.MaxRounds != 9 {
		t.Errorf("game.max_rounds = %d, want 9", cfg.Game.MaxRounds)
	}
	if len(cfg.Policy.Endpoints) != 2 || cfg.Policy.Endpoints[1] != "http://b:2" {
		t.Errorf("policy.endpoints = %v", cfg.Policy.Endpoints)
	}
	if cfg.Policy.RequestTimeout != 3*time.Second {
		t.Errorf("policy.request_timeout = %v", cfg.Policy.RequestTimeout)
	}
}

func TestOverrideBadValue(t *testing.T) {
	t.Setenv("PARLEY_GAME_MAX_ROUNDS", "lots")
	_, err := Load("testdata/valid.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "PARLEY_GAME_MAX_ROUNDS") || !strings.Contains(err.Error(), "game.max_rounds") {
		t.Fatalf("Load with bad env = %v, want an error naming the variable and key", err)
	}
}

func TestRedacted(t *testing.T) {
	cfg := Default()
	cfg.Policy.Endpoints = []string{"http://user:hunter2@host:8000"}
	cfg.Judge.BaseURL = "https://k:topsecret@api.example.com/v1"
	cfg.Train.ServerCommand = []string{"vllm", "serve", "m", "--api-key", "sk-live-1", "--port", "8000"}
	cfg.Trainer.ExtraArgs = []string{"--hf-token=hf_live_2"}
	b, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hunter2", "topsecret", "sk-live-1", "hf_live_2"} {
		if strings.Contains(string(b), s) {
			t.Errorf("YAML() leaks %q:\n%s", s, b)
		}
	}
	// and such a config does not validate: secrets belong in the environment
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "policy.api_key_env") || !strings.Contains(err.Error(), "VLLM_API_KEY") {
		t.Errorf("Validate with secrets in URLs and commands = %v", err)
	}
	if _, err := Parse(mustYAML(t, Default())); err != nil {
		t.Errorf("Parse(Default().YAML()) = %v", err)
	}
}

func TestConfigsDirLoads(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	for _, f := range files {
		if _, err := Load(f, nil); err != nil {
			t.Errorf("Load(%s) = %v", f, err)
		}
	}
}

func mustYAML(t *testing.T, c Config) []byte {
	t.Helper()
	b, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
