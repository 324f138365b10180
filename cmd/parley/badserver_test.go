package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
)

// badServer is serve-sim, or nothing, made wrong in one way.
type badServer struct {
	sim sim.Options
	// wrap changes the simulator's answers; nil leaves them.
	wrap func(h http.Handler) http.Handler
	// down: nothing listens at the endpoint.
	down bool
}

// noLoRARoutes answers 404 to the LoRA routes, as vLLM without
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True does.
func noLoRARoutes(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "lora_adapter") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"Not Found"}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// oldVersion reports vLLM 0.9.2, older than return_token_ids.
func oldVersion(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			io.WriteString(w, `{"version":"0.9.2"}`)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// noGenerationPrompt is a chat template that renders no generation prompt:
// add_generation_prompt is dropped on its way to the simulator.
func noGenerationPrompt(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" {
			b, _ := io.ReadAll(r.Body)
			body := strings.Replace(string(b), `"add_generation_prompt":true`, `"add_generation_prompt":false`, 1)
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		h.ServeHTTP(w, r)
	})
}

// start serves b and returns its URL.
func (b badServer) start(t *testing.T) string {
	t.Helper()
	if b.down {
		ts := httptest.NewServer(http.NotFoundHandler())
		ts.Close()
		return ts.URL
	}
	s, err := sim.New(b.sim)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = s.Handler()
	if b.wrap != nil {
		h = b.wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	return ts.URL
}

// TestBadServerCommands runs `parley rollout` and `parley train` against each
// way issue 8 lists a server can be wrong: one error that names the cause
// (errors.Is) and the fix, and what was written before is kept: a rollout
// output directory is not touched before the server is found good, the
// rollouts that finished before an engine died are in the file, valid, and a
// run directory holds only its frozen config.
func TestBadServerCommands(t *testing.T) {
	rolloutOnly, trainOnly := "rollout", "train"
	tests := []struct {
		name   string
		server badServer
		only   string // "" both commands
		cause  error
		says   []string
		// ran: rollouts ran and their file is written (failed ones marked)
		ran bool
	}{
		{"not running", badServer{down: true}, "", llm.ErrNotRunning,
			[]string{"nothing is listening there", "fix: start the inference server", "policy.endpoints"}, false},
		// The engine dies after 2 completions: every rollout (3 turns at
		// least) fails, whatever the order of the 4 in flight, so the step
		// fails on max_failed_fraction and never waits for a trainer.
		{"engine died mid-run", badServer{sim: sim.Options{EngineDiesAfter: 2}}, "", llm.ErrEngineDead,
			[]string{"the vLLM engine has died", "fix: restart the server", "--no-enable-chunked-prefill"}, true},
		{"serving another model", badServer{sim: sim.Options{Model: "Qwen/Qwen3-0.6B"}}, "", llm.ErrModelNotServed,
			[]string{`serves ["Qwen/Qwen3-0.6B"], not "sim-policy"`, "fix: set policy.model"}, false},
		{"LoRA not enabled (no runtime loading)", badServer{wrap: noLoRARoutes}, trainOnly, llm.ErrLoRADisabled,
			[]string{"cannot load LoRA adapters at run time", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "--enable-lora"}, false},
		{"older than return_token_ids: its version", badServer{wrap: oldVersion}, "", llm.ErrServerTooOld,
			[]string{"vLLM 0.9.2", "upgrade vLLM to 0.10.2"}, false},
		{"older than return_token_ids: it ignores it", badServer{sim: sim.Options{NoTokenIDs: true}}, rolloutOnly, llm.ErrNoTokenIDs,
			[]string{"ignored return_token_ids", "upgrade vLLM to 0.10.2"}, true},
		{"a template without a generation prompt", badServer{wrap: noGenerationPrompt}, "", rollout.ErrBridge,
			[]string{"cannot render the bridge", "no generation prompt", "set rollout.history: rerender"}, false},
	}
	for _, tt := range tests {
		for _, command := range []string{"rollout", "train"} {
			if tt.only != "" && tt.only != command {
				continue
			}
			t.Run(tt.name+"/"+command, func(t *testing.T) {
				url := tt.server.start(t)
				base := t.TempDir()
				cfg := writeYAML(t, fmt.Sprintf(`run: {name: r, dir: %q, seed: 3}
policy:
  endpoints: [%q]
  model: sim-policy
  max_retries: 1
  request_timeout: 10s
sampling: {max_tokens: 24, final_max_tokens: 24}
game:
  deliberation: {max_rounds: 1}
rollout: {group_size: 2, prompts_per_step: 2, concurrency: 4}
judge:
  kind: rule
  rule: {kind: agreement}
train: {steps: 1, trainer_timeout: 30s}
`, base, url))
				out := filepath.Join(base, "out")
				var err error
				switch command {
				case "rollout":
					cmd := newRolloutCmd(quietApp())
					cmd.SetArgs([]string{"--config", cfg, "--out", out, "--prompts", "2"})
					err = cmd.ExecuteContext(context.Background())
				case "train":
					cmd := newTrainCmd(quietApp())
					cmd.SetArgs([]string{"--config", cfg})
					err = cmd.ExecuteContext(context.Background())
				}
				if !errors.Is(err, tt.cause) {
					t.Fatalf("parley %s = %v\nwant an error that is %v", command, err, tt.cause)
				}
				msg := userMessage(err)
				for _, w := range tt.says {
					if !strings.Contains(msg, w) {
						t.Errorf("parley %s says %q\nwant it to say %q", command, msg, w)
					}
				}
				switch command {
				case "rollout":
					_, statErr := os.Stat(out)
					if !tt.ran {
						if statErr == nil {
							t.Errorf("parley rollout wrote %s although the server was found wrong before any rollout", out)
						}
						return
					}
					rs, err := dataset.ReadAllRollouts(filepath.Join(out, "rollouts.parquet"))
					if err != nil || len(rs) != 4 {
						t.Fatalf("the rollouts file after the failure: %d rollouts, %v; want all 4, valid", len(rs), err)
					}
					for _, r := range rs {
						if !r.Failed && (len(r.Sequences) == 0 || r.Final == "") {
							t.Errorf("rollout %s is neither finished nor marked failed", r.RolloutID)
						}
					}
				case "train":
					entries, _ := os.ReadDir(filepath.Join(base, "r"))
					var files []string
					for _, e := range entries {
						if !e.IsDir() {
							files = append(files, e.Name())
						}
					}
					allowed := []string{dataset.ConfigFile, dataset.StateFile, "server.json", dataset.MetricsFile, dataset.LockFile}
					for _, f := range files {
						if !slices.Contains(allowed, f) {
							t.Errorf("the run directory holds %s after the failure; want only %v", f, allowed)
						}
					}
					if !slices.Contains(files, dataset.ConfigFile) {
						t.Errorf("the run directory lost its config.yaml: %v", files)
					}
					if b, err := os.ReadDir(filepath.Join(base, "r", "batches")); err == nil && len(b) > 0 {
						t.Errorf("a batch was written for a step whose server was wrong: %v", b)
					}
				}
			})
		}
	}
}
