package main

import (
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
	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/sim"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// TestPreflightJudge: every command that judges with an LLM checks the
// judge's key before any work: an unset key variable is named with its
// config key, a key the judge answers 401 to is named as refused, within
// seconds, and the policy got no generation request.
func TestPreflightJudge(t *testing.T) {
	var generated atomic.Int64
	url := badServer{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == sim.PathCompletions || r.URL.Path == sim.PathChat {
				generated.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}}.start(t)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer refusing.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "config.yaml", url, refusing.URL)
	ro := filepath.Join(dir, "ro")
	if _, err := run(t, newRolloutCmd(quietApp()), "--config", cfg, "--out", ro, "--prompts", "1"); err != nil {
		t.Fatal(err)
	}
	generated.Store(0)
	t.Setenv("PARLEY_TEST_JUDGE_KEY", "sk-wrong")
	commands := []struct {
		name string
		cmd  func() *cobra.Command
		args []string
	}{
		{"score", func() *cobra.Command { return newScoreCmd(quietApp()) },
			[]string{"--in", filepath.Join(ro, "rollouts.parquet"), "--out", filepath.Join(dir, "scored")}},
		{"train", func() *cobra.Command { return newTrainCmd(quietApp()) }, []string{"--rollout.group_size", "2"}},
		{"eval pairwise", func() *cobra.Command { return newEvalCmd(quietApp()) },
			[]string{"pairwise", "--left", "base", "--right", "adapter:x", "--prompts", "1", "--runs", "1"}},
	}
	keys := []struct {
		name, env string
		says      []string
	}{
		{"key variable unset", "PARLEY_TEST_JUDGE_KEY_UNSET", []string{"judge.api_key_env", "PARLEY_TEST_JUDGE_KEY_UNSET", "not set"}},
		{"key refused", "PARLEY_TEST_JUDGE_KEY", []string{"config key judge.api_key_env names PARLEY_TEST_JUDGE_KEY", "API key rejected (HTTP 401)", refusing.URL}},
	}
	for _, c := range commands {
		for _, k := range keys {
			t.Run(c.name+"/"+k.name, func(t *testing.T) {
				os.RemoveAll(filepath.Join(dir, "runs"))
				start := time.Now()
				args := append(append([]string{}, c.args...), "--config", cfg, "--judge.api_key_env", k.env)
				_, err := run(t, c.cmd(), args...)
				if el := time.Since(start); el > 5*time.Second {
					t.Errorf("the preflight took %s, want seconds at most", el)
				}
				if err == nil {
					t.Fatal("succeeded")
				}
				msg := userMessage(err)
				for _, w := range k.says {
					if !strings.Contains(msg, w) {
						t.Errorf("parley %s says %q\nwant it to say %q", c.name, msg, w)
					}
				}
				if strings.Contains(msg, "sk-wrong") {
					t.Errorf("parley %s shows the key: %q", c.name, msg)
				}
				if n := generated.Load(); n > 0 {
					t.Errorf("the policy got %d generation requests before the judge was found wrong", n)
				}
			})
		}
	}
}

// TestWarnDefaults: a missing or empty config, or one that leaves out
// server, judge or generator keys the command uses, gives one warning line
// naming those keys at their defaults with the values in force; keys the
// command never reads are not named; a config that sets them gives none.
func TestWarnDefaults(t *testing.T) {
	policy := "policy: {endpoints: [\"http://10.0.0.1:8000\"], model: m}\n"
	generator := "generator: {base_url: \"http://10.0.0.3/v1\", model: g}\n"
	train := usesPolicy | usesJudge
	tests := []struct {
		name string
		yaml string // "-": no --config
		uses uses
		msg  string // "": no warning
		keys []string
	}{
		{"no --config", "-", train, "no --config: these server keys are at their defaults",
			[]string{"policy.endpoints", "policy.model", "judge.base_url", "judge.model"}},
		{"empty config", "", train, "these server keys are at their defaults (not set by the config, PARLEY_* variables or flags)",
			[]string{"policy.endpoints", "policy.model", "judge.base_url", "judge.model"}},
		{"policy only, default LLM judge", policy, train, "these server keys are at their defaults (not set by the config, PARLEY_* variables or flags)",
			[]string{"judge.base_url", "judge.model"}},
		{"policy and a rule judge", policy + "judge: {kind: rule, rule: {kind: agreement}}\n", train, "", nil},
		{"policy and an LLM judge", policy + "judge: {kind: ca, base_url: \"http://10.0.0.2/v1\", model: j}\n", train, "", nil},
		{"a rollout uses no judge", policy, usesPolicy, "", nil},
		{"eval pairwise asks the LLM judge whatever judge.kind", policy + "judge: {kind: rule, rule: {kind: agreement}}\n", usesPolicy | usesChatJudge,
			"these server keys are at their defaults (not set by the config, PARLEY_* variables or flags)", []string{"judge.base_url", "judge.model"}},
		{"generator only, for curriculum generate", generator, usesGenerator, "", nil},
		{"curriculum generate without a generator", policy, usesGenerator,
			"these server keys are at their defaults (not set by the config, PARLEY_* variables or flags)", []string{"generator.base_url", "generator.model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "-" {
				path = writeYAML(t, tt.yaml)
			}
			cmd := &cobra.Command{}
			configFlags(cmd, new(string))
			a, logs := observedApp(zap.WarnLevel)
			if _, _, err := a.setup(cmd, path, tt.uses); err != nil {
				t.Fatal(err)
			}
			warned := logs.FilterMessageSnippet("at their defaults").All()
			if tt.msg == "" {
				if len(warned) > 0 {
					t.Fatalf("warned %q %v, want no warning", warned[0].Message, warned[0].ContextMap())
				}
				return
			}
			if len(warned) != 1 || warned[0].Message != tt.msg {
				t.Fatalf("warnings %v, want one: %q", warned, tt.msg)
			}
			got := warned[0].ContextMap()
			if len(got) != len(tt.keys) {
				t.Errorf("warning names %v, want %v", got, tt.keys)
			}
			for _, k := range tt.keys {
				if _, ok := got[k]; !ok {
					t.Errorf("warning names %v, want %s among them", got, k)
				}
			}
			if v, ok := got["policy.endpoints"]; ok && fmt.Sprint(v) != "[http://127.0.0.1:8000]" {
				t.Errorf("policy.endpoints in force %v, want the default [http://127.0.0.1:8000]", v)
			}
		})
	}
}

// TestCurriculumGenerateWarnsOnlyItsKeys: parley curriculum generate with a
// config that sets only the generator does not warn that policy or judge
// keys are at their defaults: it never uses them.
func TestCurriculumGenerateWarnsOnlyItsKeys(t *testing.T) {
	path := writeYAML(t, "generator: {base_url: \"http://127.0.0.1:9/v1\", model: g, max_retries: 0}\n")
	a, logs := observedApp(zap.WarnLevel)
	cmd := newCurriculumCmd(a)
	cmd.SetOut(&strings.Builder{})
	cmd.SetArgs([]string{"generate", "--config", path, "--n", "1", "--out", filepath.Join(t.TempDir(), "c.jsonl")})
	_ = cmd.Execute() // nothing listens on port 9: only the warning matters
	for _, e := range logs.FilterMessageSnippet("at their defaults").All() {
		t.Errorf("curriculum generate warned %q %v, want no warning (it sets the generator and uses nothing else)", e.Message, e.ContextMap())
	}
}

// TestBenchResponsesWarnsNothing: parley bench --responses scores offline
// without a config and does not warn that the policy keys are at their
// defaults: it asks no server.
func TestBenchResponsesWarnsNothing(t *testing.T) {
	dir := t.TempDir()
	fixture := filepath.Join(dir, "aime.jsonl")
	if err := bench.WriteResponses(fixture, []bench.Response{{ID: "s1", Response: "\\boxed{42}"}, {ID: "s2", Response: "\\boxed{99}"}, {ID: "s3", Response: "\\boxed{1}"}}); err != nil {
		t.Fatal(err)
	}
	a, logs := observedApp(zap.WarnLevel)
	if _, err := run(t, newBenchCmd(a), "aime24", "--data", aimeFixture, "--responses", fixture, "--out", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	for _, e := range logs.FilterMessageSnippet("at their defaults").All() {
		t.Errorf("bench --responses warned %q %v, want no warning (it asks no server)", e.Message, e.ContextMap())
	}
}

// TestForceRule: parley rollout and eval pairwise refuse an existing --out
// (and eval's --details) naming --force before they contact any server:
// against a dead endpoint the refusal comes at once. With --force, rollout
// replaces what --out holds.
func TestForceRule(t *testing.T) {
	dead := badServer{down: true}.start(t)
	live := startSim(t).URL
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "rollouts.parquet"), []byte("old"), 0o644)
	file := filepath.Join(dir, "pairwise.json")
	os.WriteFile(file, []byte("[]"), 0o644)
	pairwise := []string{"pairwise", "--left", "base", "--right", "adapter:x", "--prompts", "1", "--runs", "1"}
	tests := []struct {
		name    string
		cmd     func(*cli) *cobra.Command
		url     string
		args    []string
		wantErr string
	}{
		{"rollout into a non-empty directory", newRolloutCmd, dead, []string{"--out", full, "--prompts", "1"}, "pass --force"},
		{"rollout --force against a dead server gets past --out", newRolloutCmd, dead, []string{"--out", full, "--prompts", "1", "--force"}, "policy.endpoints"},
		{"rollout --force replaces", newRolloutCmd, live, []string{"--out", full, "--prompts", "1", "--force"}, ""},
		{"eval pairwise onto an existing --out", newEvalCmd, dead, append(pairwise, "--out", file), "pass --force"},
		{"eval pairwise onto an existing --details", newEvalCmd, dead, append(pairwise, "--out", filepath.Join(dir, "new.json"), "--details", file), "pass --force"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), "config.yaml", tt.url, tt.url)
			start := time.Now()
			_, err := run(t, tt.cmd(quietApp()), append(tt.args, "--config", cfg)...)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("parley %v = %v, want %q", tt.args, err, tt.wantErr)
			}
			if el := time.Since(start); tt.wantErr == "pass --force" && el > time.Second {
				t.Errorf("the refusal took %s: the command did work before checking --out", el)
			}
		})
	}
	if rs, err := dataset.ReadAllRollouts(filepath.Join(full, "rollouts.parquet")); err != nil || len(rs) == 0 {
		t.Errorf("after rollout --force, %s holds %d rollouts (%v), want the new ones", full, len(rs), err)
	}
	if b, _ := os.ReadFile(file); string(b) != "[]" {
		t.Errorf("eval pairwise changed %s although it refused it: %q", file, b)
	}
}
