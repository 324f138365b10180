package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/config/internal/keydocs"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/rollout/deliberation"
	_ "github.com/parleyhq/parley/rollout/games"
	"github.com/spf13/pflag"
)

// rounds is the deliberation game's max_rounds in cfg.
func rounds(cfg Config) int { return cfg.Game.Section("deliberation").(*deliberation.Config).MaxRounds }

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
	if cfg.Run.Seed != 7 || rounds(cfg) != 4 || len(cfg.Policy.Endpoints) != 2 || cfg.Rollout.GroupSize != 4 {
		t.Errorf("Load(valid) = %+v", cfg)
	}
	// defaults survive where the file is silent
	if cfg.Rollout.History != "tokens" {
		t.Errorf("rollout.history = %q, want the default tokens", cfg.Rollout.History)
	}
	if cfg.Sampling.MaxTokens != Default().Sampling.MaxTokens {
		t.Errorf("sampling.max_tokens = %d, want default %d", cfg.Sampling.MaxTokens, Default().Sampling.MaxTokens)
	}
	// A whole number written as a float is an integer.
	if cfg, err := Parse([]byte("run:\n  seed: 2.0\nrollout:\n  group_size: 1e1\n")); err != nil || cfg.Run.Seed != 2 || cfg.Rollout.GroupSize != 10 {
		t.Errorf("Parse(seed: 2.0, group_size: 1e1) = seed %d, group size %d, %v; want 2, 10", cfg.Run.Seed, cfg.Rollout.GroupSize, err)
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
		{"wrong type int", "game:\n  deliberation:\n    max_rounds: many\n", []string{"line 3", "key game.deliberation.max_rounds", "many"}},
		{"wrong type float", "sampling:\n  top_p: abc\n", []string{"line 2: key sampling.top_p: cannot unmarshal !!str `abc` into float64"}},
		{"wrong type section", "run: 5\n", []string{"line 1: key run: cannot unmarshal"}},
		{"fractional seed", "run:\n  seed: 1.5\n", []string{"line 2: key run.seed: want an integer, got 1.5"}},
		{"fractional group size", "rollout:\n  group_size: 4.7\n", []string{"line 2: key rollout.group_size: want an integer, got 4.7"}},
		{"fractional series length", "game:\n  multiparty:\n    series_length: 2.9\n", []string{"line 3: key game.multiparty.series_length: want an integer, got 2.9"}},
		{"fractional duration", "policy:\n  request_timeout: 1.5\n", []string{"line 2: key policy.request_timeout: want a duration such as 30s, got 1.5"}},
		{"moved game key", "game:\n  max_rounds: 3\n", []string{"line 2", `"game.max_rounds" moved to game.deliberation.max_rounds`}},
		{"unknown game section", "game:\n  chess:\n    depth: 3\n", []string{"line 2", `unknown key "game.chess"`, "deliberation", "single"}},
		{"unknown game key", "game:\n  deliberation:\n    rounds: 3\n", []string{"line 3", `unknown key "game.deliberation.rounds"`, "max_rounds"}},
		{"bad role policy", "roles:\n  B:\n    policy: frozen\n", []string{"key roles.B.policy", "frozen", "base"}},
		{"unknown role key", "roles:\n  B:\n    polcy: base\n", []string{"line 3", `unknown key "roles.B.polcy"`}},
		{"external role without url", "roles:\n  B:\n    policy: external\n    model: m\n", []string{"key roles.B.base_url"}},
		{"target_word rule", "judge:\n  kind: rule\n  rule:\n    kind: target_word\n", []string{"key judge.rule.target_word"}},
		{"negative rationale bound", "judge:\n  rationale_max_chars: -1\n", []string{"key judge.rationale_max_chars"}},
		{"rationale bound without structured output", "judge:\n  structured_output: false\n  rationale_max_chars: 300\n", []string{"key judge.rationale_max_chars", "judge.structured_output: true"}},
		{"wrong type list", "policy:\n  endpoints: 5\n", []string{"line 2", "key policy.endpoints"}},
		{"bad yaml", "run: [\n", []string{"invalid YAML"}},
		{"out of range rounds", "game:\n  deliberation:\n    max_rounds: 0\n", []string{"key game.deliberation.max_rounds", "[1, 100]"}},
		{"out of range temperature", "sampling:\n  temperature: -1\n", []string{"key sampling.temperature"}},
		{"bad enum env", "game:\n  env: chess\n", []string{"key game.env", "chess", "deliberation"}},
		{"bad enum mask", "grpo:\n  mask: all\n", []string{"key grpo.mask"}},
		{"bad endpoint", "policy:\n  endpoints: [\"localhost:8000\"]\n", []string{"key policy.endpoints[0]"}},
		{"secret in env field", "judge:\n  api_key_env: sk-abc123-secret\n", []string{"key judge.api_key_env", "environment"}},
		{"single with dialogue mask", "game:\n  env: single\ngrpo:\n  mask: dialogue\n", []string{"key grpo.mask", "single game records only final"}},
		{"negative staleness", "train:\n  max_staleness: -1\n", []string{"key train.max_staleness", "-1"}},
		{"negative off-policy steps", "train:\n  max_off_policy_steps: -2\n", []string{"key train.max_off_policy_steps", "-2"}},
		{"unknown sampling", "train:\n  sampling: async\n", []string{"key train.sampling", "async", "stream"}},
		{"oversample below 1", "train:\n  oversample_max: 0.5\n", []string{"key train.oversample_max", "at least 1"}},
		{"negative serving sample period", "train:\n  serving_sample_every: -1s\n", []string{"key train.serving_sample_every", "negative"}},
		{"metrics addr", "train:\n  metrics_addr: 9464\n", []string{"key train.metrics_addr", "127.0.0.1:9464"}},
		{"bad mix category", "curriculum:\n  mix:\n    sports: 1\n", []string{"curriculum.mix.sports"}},
		{"negative group", "rollout:\n  group_size: -2\n", []string{"key rollout.group_size"}},
		{"bad enum history", "rollout:\n  history: messages\n", []string{"key rollout.history", "messages", "tokens, rerender"}},
		{"bad duration", "policy:\n  request_timeout: soon\n", []string{"line 2", "soon"}},
		{"bad judge mode", "judge:\n  mode: batch\n", []string{"key judge.mode", "batch", "pointwise, group"}},
		{"group mode with a rule", "judge:\n  kind: rule\n  mode: group\n  rule:\n    kind: length\n    target_length: 5\n", []string{"key judge.mode", "judge.kind ca", "not rule"}},
		{"position check out of range", "judge:\n  mode: group\n  position_check: 1.5\n", []string{"key judge.position_check", "1.5"}},
		{"position check pointwise", "judge:\n  position_check: 0.2\n", []string{"key judge.position_check", "needs judge.mode group"}},
		{"negative judge price", "judge:\n  price:\n    input: -0.15\n    output: 0.6\n", []string{"cfg.yaml:3: key judge.price.input", "-0.15"}},
		{"gold every negative", "judge:\n  gold:\n    path: gold.jsonl\n    every: -1\n", []string{"key judge.gold.every"}},
		{"gold every without path", "judge:\n  gold:\n    every: 5\n", []string{"key judge.gold.path", "judge.gold.every is set"}},
		{"audit share out of range", "judge:\n  audit:\n    share: 1.5\n", []string{"key judge.audit.share", "1.5"}},
		{"audit without a model", "judge:\n  audit:\n    share: 0.1\n    base_url: http://127.0.0.1:9/v1\n", []string{"key judge.audit.model", "must not be empty"}},
		{"audit without a URL", "judge:\n  audit:\n    share: 0.1\n    model: gpt-5.2\n", []string{"key judge.audit.base_url"}},
		{"audit of a rule judge", "judge:\n  kind: rule\n  rule:\n    kind: length\n    target_length: 50\n  audit:\n    share: 0.1\n    model: m\n    base_url: http://127.0.0.1:9/v1\n",
			[]string{"key judge.audit.share", "judge.kind ca"}},
		{"audit odd window", "judge:\n  audit:\n    share: 0.1\n    model: m\n    base_url: http://127.0.0.1:9/v1\n    alarm_window: 5\n",
			[]string{"key judge.audit.alarm_window", "even", "got 5"}},
		{"audit zero threshold", "judge:\n  audit:\n    share: 0.1\n    model: m\n    base_url: http://127.0.0.1:9/v1\n    alarm_threshold: 0\n",
			[]string{"key judge.audit.alarm_threshold", "positive"}},
		{"price on a rule judge", "judge:\n  kind: rule\n  price:\n    output: 0.6\n", []string{"key judge.price", "rule judge asks no API"}},
		{"rule without keywords", "judge:\n  kind: rule\n  rule:\n    kind: keywords\n", []string{"key judge.rule.keywords"}},
		{"negative tis cap", "trainer:\n  tis_cap: -1\n", []string{"key trainer.tis_cap", "-1"}},
		{"negative eval_every", "train:\n  eval_every: -3\n", []string{"key train.eval_every", "-3"}},
		{"negative keep_states", "trainer:\n  keep_states: -1\n", []string{"key trainer.keep_states", "-1"}},
		{"keep_weights with LoRA", "trainer:\n  keep_weights: 3\n", []string{"key trainer.keep_weights", "is for trainer.full_finetune"}},
		{"keep_weights too few", "train:\n  max_off_policy_steps: 1\ntrainer:\n  full_finetune: true\n  model: m\n  keep_weights: 2\n",
			[]string{"key trainer.keep_weights", "at least train.max_off_policy_steps + 2 = 3", "got 2"}},
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

// TestLoadEnv: a PARLEY_* variable that sets no key (a misspelled
// override) is refused, naming the known variables of its section; a
// key's variable, parley's own (OwnEnv, the tests') and a variable the
// config names for a secret (*_env) are not.
func TestLoadEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		env  map[string]string
		want []string // nil: no error
	}{
		{"misspelled key", "run:\n  seed: 1\n", map[string]string{"PARLEY_TRAIN_STEP": "9"},
			[]string{"environment variable PARLEY_TRAIN_STEP sets no config key", "the known PARLEY_TRAIN_* are", "PARLEY_TRAIN_STEPS,"}},
		{"unknown section", "run:\n  seed: 1\n", map[string]string{"PARLEY_TRIAN_STEPS": "9"},
			[]string{"PARLEY_TRIAN_STEPS sets no config key", "parley config keys lists the keys"}},
		{"two", "run:\n  seed: 1\n", map[string]string{"PARLEY_TRAIN_STEP": "9", "PARLEY_RUN_SED": "3"},
			[]string{"PARLEY_RUN_SED sets no config key", "the known PARLEY_RUN_* are PARLEY_RUN_NAME, PARLEY_RUN_DIR, PARLEY_RUN_SEED", "PARLEY_TRAIN_STEP sets"}},
		{"a key's", "run:\n  seed: 1\n", map[string]string{"PARLEY_TRAIN_STEPS": "9", "PARLEY_GAME_DELIBERATION_MAX_ROUNDS": "3"}, nil},
		{"parley's own", "run:\n  seed: 1\n", map[string]string{"PARLEY_PYTHON": "python3", "PARLEY_CONFIG": "x.yaml", "PARLEY_TEST_ANY": "1"}, nil},
		{"a secret the config names", "train:\n  token_env: PARLEY_MY_TOKEN\njudge:\n  api_key_env: PARLEY_JUDGE_KEY\n",
			map[string]string{"PARLEY_MY_TOKEN": "t", "PARLEY_JUDGE_KEY": "k"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeFile(t, tc.body), nil)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Load with %v: %v", tc.env, err)
				}
				return
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Load with %v = %v, want it to contain %q", tc.env, err, w)
				}
			}
		})
	}
}

// TestValidationErrorLines: a bad value set in the file is an error that
// starts with the file and the line of its key (an item of a list, its
// own line); one set by a flag or a variable names it; Parse names the
// line.
func TestValidationErrorLines(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		flags      []string
		env        map[string]string
		want       []string // after the file's path, or whole
	}{
		{"leaf", "run:\n  name: x\nsampling:\n  top_p: 3\n", nil, nil, []string{":4: key sampling.top_p: must be in (0, 1], got 3"}},
		{"flow list item", "policy:\n  endpoints: [\"http://a:1\", \"ftp://b\"]\n", nil, nil, []string{`:2: key policy.endpoints[1]: "ftp://b" is not an http(s) URL`}},
		{"block list item", "policy:\n  endpoints:\n    - http://a:1\n    - localhost:8000\n", nil, nil, []string{`:4: key policy.endpoints[1]`}},
		{"game key", "game:\n  env: multiparty\n  multiparty:\n    series_length: 0\n", nil, nil, []string{":4: key game.multiparty.series_length: must be in [1, 10000], got 0"}},
		{"game env", "run:\n  seed: 1\ngame:\n  env: chess\n", nil, nil, []string{`:4: key game.env: "chess" is not one of`}},
		{"role", "roles:\n  B:\n    policy: frozen\n", nil, nil, []string{`:3: key roles.B.policy`}},
		{"map entry", "curriculum:\n  mix:\n    sports: 1\n", nil, nil, []string{":3: key curriculum.mix.sports: unknown category"}},
		{"enum", "log:\n  level: loud\n", nil, nil, []string{`:2: key log.level: "loud" is not one of`}},
		{"two errors", "sampling:\n  top_p: 3\ntrainer:\n  tis_cap: -1\n", nil, nil, []string{":2: key sampling.top_p", ":4: key trainer.tis_cap"}},
		{"flag over the file", "sampling:\n  temperature: 1\n", []string{"--sampling.temperature=-1"}, nil, []string{"flag --sampling.temperature: key sampling.temperature: must be in [0, 5], got -1"}},
		{"flag list over the file", "policy:\n  endpoints:\n    - http://a:1\n    - http://b:2\n", []string{"--policy.endpoints=http://a:1,ftp://c"}, nil, []string{`flag --policy.endpoints: key policy.endpoints[1]: "ftp://c"`}},
		{"environment", "run:\n  seed: 1\n", nil, map[string]string{"PARLEY_ROLLOUT_GROUP_SIZE": "-2"}, []string{"environment variable PARLEY_ROLLOUT_GROUP_SIZE: key rollout.group_size: must be positive, got -2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			RegisterFlags(fs)
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			p := writeFile(t, tc.body)
			_, err := Load(p, fs)
			for _, w := range tc.want {
				if tc.flags == nil && tc.env == nil {
					w = p + w
				}
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%q) = %v, want it to contain %q", tc.body, err, w)
				}
			}
		})
	}
	_, err := Parse([]byte("run:\n  name: x\nsampling:\n  top_p: 3\n"))
	if want := "line 4: key sampling.top_p"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse = %v, want it to contain %q", err, want)
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
	t.Setenv("PARLEY_ROLLOUT_HISTORY", "rerender")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse([]string{"--game.deliberation.max_rounds=9", "--run.seed=5"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load("testdata/valid.yaml", fs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Run.Seed != 5 {
		t.Errorf("run.seed = %d, want 5 (flag beats env and file)", cfg.Run.Seed)
	}
	if rounds(cfg) != 9 {
		t.Errorf("game.deliberation.max_rounds = %d, want 9", rounds(cfg))
	}
	if len(cfg.Policy.Endpoints) != 2 || cfg.Policy.Endpoints[1] != "http://b:2" {
		t.Errorf("policy.endpoints = %v", cfg.Policy.Endpoints)
	}
	if cfg.Policy.RequestTimeout != 3*time.Second {
		t.Errorf("policy.request_timeout = %v", cfg.Policy.RequestTimeout)
	}
	if cfg.Rollout.History != "rerender" {
		t.Errorf("rollout.history = %q, want rerender from PARLEY_ROLLOUT_HISTORY", cfg.Rollout.History)
	}
}

func TestOverrideBadValue(t *testing.T) {
	t.Setenv("PARLEY_GAME_DELIBERATION_MAX_ROUNDS", "lots")
	_, err := Load("testdata/valid.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "PARLEY_GAME_DELIBERATION_MAX_ROUNDS") || !strings.Contains(err.Error(), "game.deliberation.max_rounds") {
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

func TestRedactArgs(t *testing.T) {
	tests := []struct {
		args, want []string
	}{
		{[]string{"vllm", "serve", "m", "--api-key", "sk-1", "--port", "8000"}, []string{"vllm", "serve", "m", "--api-key", "REDACTED", "--port", "8000"}},
		{[]string{"--hf-token=hf_2", "--HF_TOKEN", "x", "--authtoken", "y"}, []string{"--hf-token=REDACTED", "--HF_TOKEN", "REDACTED", "--authtoken", "REDACTED"}},
		{[]string{"--client-secret", "s", "--db_password=p", "--keyfile", "k"}, []string{"--client-secret", "REDACTED", "--db_password=REDACTED", "--keyfile", "REDACTED"}},
		// Not secrets: vLLM's and serve-sim's tokenizer flags, token counts.
		{[]string{"--tokenizer", "models/tiny", "--tokenizer-mode=auto", "--max-num-batched-tokens", "8192"},
			[]string{"--tokenizer", "models/tiny", "--tokenizer-mode=auto", "--max-num-batched-tokens", "8192"}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := redactArgs(tt.args); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("redactArgs(%q) = %q, want %q", tt.args, got, tt.want)
		}
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

// TestRegisteredGameSection checks that a game added through the registry
// alone (the test-only toy game) gets its config section, its validation
// and its override keys, with no change to this package.
func TestRegisteredGameSection(t *testing.T) {
	cfg, err := Parse([]byte("game:\n  env: toy\n  toy:\n    turns: 3\ngrpo:\n  mask: final\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Game.Active().(*toygame.Config).Turns; got != 3 {
		t.Errorf("game.toy.turns = %d, want 3", got)
	}
	if _, err := Parse([]byte("game:\n  env: toy\n  toy:\n    turns: 30\ngrpo:\n  mask: final\n")); err == nil || !strings.Contains(err.Error(), "key game.toy.turns") {
		t.Errorf("Parse(turns 30) = %v, want an error naming game.toy.turns", err)
	}
	if !slices.Contains(Keys(), "game.toy.turns") {
		t.Errorf("Keys() lacks game.toy.turns: %v", Keys())
	}
	b, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "toy:\n        turns: 3") && !strings.Contains(string(b), "toy:\n    turns: 3") {
		t.Errorf("YAML() does not hold the toy section:\n%s", b)
	}
	back, err := Parse(b)
	if err != nil || back.Game.Active().(*toygame.Config).Turns != 3 {
		t.Errorf("Parse(YAML()) = %v, %v; want the toy section back", back.Game.Active(), err)
	}
}

func TestChanges(t *testing.T) {
	a := Default()
	b := Default()
	b.Game = defaultGame("deliberation") // fresh sections, equal values
	b.Run.Seed = 99
	b.Rollout.GroupSize = 16
	b.Policy.Endpoints = []string{"http://other:8000"}
	b.Train.Steps = 500
	b.Log.Level = "debug"
	b.Game.Section("deliberation").(*deliberation.Config).MaxRounds = 9
	op, frozen := Changes(a, b)
	var opKeys, frozenKeys []string
	for _, c := range op {
		opKeys = append(opKeys, c.Key)
	}
	for _, c := range frozen {
		frozenKeys = append(frozenKeys, c.Key)
	}
	if want := []string{"policy.endpoints", "train.steps", "log.level"}; !slices.Equal(opKeys, want) {
		t.Errorf("operational changes = %v, want %v", opKeys, want)
	}
	if want := []string{"run.seed", "game.deliberation.max_rounds", "rollout.group_size"}; !slices.Equal(frozenKeys, want) {
		t.Errorf("frozen changes = %v, want %v", frozenKeys, want)
	}
	if frozen[0].Old != "1" || frozen[0].New != "99" {
		t.Errorf("run.seed change = %+v, want 1 → 99", frozen[0])
	}
	if op, frozen := Changes(a, Default()); len(op)+len(frozen) != 0 {
		t.Errorf("Changes(Default, Default) = %v, %v; want none", op, frozen)
	}
}

// TestChangesFrozenRoundTrip: a config and its frozen config.yaml read
// back differ in nothing, though nil maps come back empty (a resume of an
// unchanged run must pass the frozen config rules).
func TestChangesFrozenRoundTrip(t *testing.T) {
	for _, body := range []string{"", "roles:\n  B:\n    policy: base\n", "curriculum:\n  mix: {}\n"} {
		cfg, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		y, err := cfg.YAML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(y)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]Config{{back, cfg}, {cfg, back}} {
			if op, frozen := Changes(pair[0], pair[1]); len(op)+len(frozen) != 0 {
				t.Errorf("config %q: Changes across the frozen file = %v, %v; want none", body, op, frozen)
			}
		}
	}
	a, b := Default(), Default()
	b.Curriculum.Mix = map[string]float64{"professional": 1}
	if _, frozen := Changes(a, b); len(frozen) != 1 || frozen[0].Key != "curriculum.mix" {
		t.Errorf("a real mix change: frozen %v, want curriculum.mix", frozen)
	}
}

// TestKeyDocsCurrent fails when a config field's comment changed without
// go generate ./config, and when a key has no doc at all.
func TestKeyDocsCurrent(t *testing.T) {
	want, err := keydocs.Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("keydocs_gen.go")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("keydocs_gen.go is stale: run go generate ./config")
	}
	for _, k := range KeyInfos() {
		if k.Doc == "" {
			t.Errorf("key %s has no doc comment on its field", k.Key)
		}
	}
}

// TestConfigDocCurrent fails when docs/config.md is not what parley config
// keys --markdown writes.
func TestConfigDocCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := WriteKeysMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/config.md")
	// The test-only toy game is registered here, not in parley.
	var want []string
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if !strings.HasPrefix(line, "| `game.toy.") {
			want = append(want, line)
		}
	}
	if err != nil || string(got) != strings.Join(want, "") {
		t.Errorf("docs/config.md is stale: run go run ./cmd/parley config keys --markdown > docs/config.md")
	}
}

func TestScoreScale(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"default: the CA judge", func(*Config) {}, "CA 1–5"},
		{"rule", func(c *Config) { c.Judge.Kind, c.Judge.Rule.Kind = "rule", "keyword_share" }, "rule keyword_share 0–1"},
		{"a game's scorer without a scale", func(c *Config) { c.Judge.Kind, c.Game.Env = "game", "deliberation" }, "deliberation score"},
	}
	for _, tt := range tests {
		c := Default()
		tt.change(&c)
		if got := c.ScoreScale().Label(); got != tt.want {
			t.Errorf("%s: ScoreScale().Label() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestReportTo (issue 12, item 9): trainer.report_to takes HF Trainer's
// names, as a list or one scalar (a comma list too); a bad value is named;
// it changes where metrics go, not what is trained, so a resume may change
// it.
func TestReportTo(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
		err        []string
	}{
		{"default", "", []string{"tensorboard"}, nil},
		{"scalar", "trainer:\n  report_to: wandb\n", []string{"wandb"}, nil},
		{"list", "trainer:\n  report_to: [tensorboard, wandb]\n", []string{"tensorboard", "wandb"}, nil},
		{"comma scalar", "trainer:\n  report_to: tensorboard, wandb\n", []string{"tensorboard", "wandb"}, nil},
		{"none", "trainer:\n  report_to: none\n", []string{"none"}, nil},
		{"unknown", "trainer:\n  report_to: [tensorboard, mlflow]\n", nil, []string{"key trainer.report_to", `"mlflow" is not one of tensorboard, wandb, none`}},
		{"typo", "trainer:\n  report_to: tensorbord\n", nil, []string{"key trainer.report_to", `"tensorbord"`}},
		{"none and more", "trainer:\n  report_to: [none, wandb]\n", nil, []string{"key trainer.report_to", `"none" cannot be combined`}},
		{"twice", "trainer:\n  report_to: wandb,wandb\n", nil, []string{"key trainer.report_to", `names "wandb" twice`}},
		{"empty", "trainer:\n  report_to: []\n", nil, []string{"key trainer.report_to", "is empty"}},
		{"mapping", "trainer:\n  report_to: {wandb: 1}\n", nil, []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(writeFile(t, tc.body), nil)
			if tc.err == nil {
				if err != nil || !slices.Equal(cfg.Trainer.ReportTo, tc.want) {
					t.Fatalf("Load(%q) report_to = %v, %v; want %v", tc.body, cfg.Trainer.ReportTo, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load(%q) = nil error, want %q", tc.body, tc.err)
			}
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%q) error = %q, want it to contain %q", tc.body, err, w)
				}
			}
		})
	}

	t.Setenv("PARLEY_TRAINER_REPORT_TO", "tensorboard,wandb")
	cfg, err := Load(writeFile(t, ""), nil)
	if err != nil || !cfg.Trainer.Reports(ReportWandb) || !cfg.Trainer.Reports(ReportTensorBoard) {
		t.Fatalf("PARLEY_TRAINER_REPORT_TO=tensorboard,wandb: report_to = %v, %v", cfg.Trainer.ReportTo, err)
	}
	op, frozen := Changes(Default(), cfg)
	if len(op) != 1 || op[0].Key != "trainer.report_to" || len(frozen) != 0 {
		t.Errorf("Changes(default, report_to wandb) = %v, %v; want trainer.report_to operational", op, frozen)
	}
}

// TestGameCurriculum: without curriculum.path, a config plays its game's
// default curriculum (rollout.Spec.Curriculum.Default); a path the file,
// the environment or a flag gives wins.
func TestGameCurriculum(t *testing.T) {
	tests := []struct {
		name, body, env, flag, want string
	}{
		{"defaults", "", "", "", "builtin:dilemmas"},
		{"single", "game: {env: single}\ngrpo: {mask: final}\n", "", "", "builtin:open-ended"},
		{"endowment", "game: {env: endowment}\n", "", "", "builtin:endowment"},
		{"multiparty", "game: {env: multiparty}\n", "", "", "builtin:2hb2g"},
		{"toy", "game: {env: toy}\ngrpo: {mask: final}\n", "", "", "builtin:open-ended"},
		{"file", "game: {env: endowment}\ncurriculum: {path: mine.jsonl}\n", "", "", "mine.jsonl"},
		{"environment", "game: {env: multiparty}\n", "env.jsonl", "", "env.jsonl"},
		{"flag", "game: {env: multiparty}\n", "", "flag.jsonl", "flag.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(EnvName("curriculum.path"), tt.env)
			}
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			RegisterFlags(fs)
			if tt.flag != "" {
				if err := fs.Parse([]string{"--curriculum.path=" + tt.flag}); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load(writeFile(t, tt.body), fs)
			if err != nil {
				t.Fatalf("Load(%q): %v", tt.body, err)
			}
			if cfg.Curriculum.Path != tt.want {
				t.Errorf("Load(%q): curriculum.path = %q, want %q", tt.body, cfg.Curriculum.Path, tt.want)
			}
			if tt.env == "" && tt.flag == "" {
				if p, err := Parse([]byte(tt.body)); err != nil || p.Curriculum.Path != tt.want {
					t.Errorf("Parse(%q): curriculum.path = %q (%v), want %q", tt.body, p.Curriculum.Path, err, tt.want)
				}
			}
		})
	}
}
