package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/sim"
	"github.com/spf13/cobra"
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
