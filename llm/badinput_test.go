package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// vllmError is a vLLM error body (ErrorResponse) as its server writes it.
func vllmError(status int, typ, msg string, param any) string {
	p := "null"
	if param != nil {
		p = fmt.Sprintf("%q", param)
	}
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":%s,"code":%d}}`, msg, typ, p, status)
}

// fakeRoute answers one path of a vLLM-shaped test server.
type fakeRoute struct {
	status int
	body   string
}

// vllmShaped serves routes by path (others 404 as FastAPI does) and counts
// requests.
func vllmShaped(t *testing.T, routes map[string]fakeRoute) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	hits := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		rt, ok := routes[r.URL.Path]
		if !ok {
			rt = fakeRoute{http.StatusNotFound, `{"detail":"Not Found"}`}
		}
		if rt.body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(rt.status)
		w.Write([]byte(rt.body))
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// refusedURL is a base URL where nothing listens.
func refusedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	return url
}

const (
	deadEngineMsg = "EngineCore encountered an issue. See stack trace (above) for the root cause."
	okModels      = `{"object":"list","data":[{"id":"tiny","object":"model","owned_by":"vllm","root":"/m","parent":null,"max_model_len":4096}]}`
)

// TestBadServers: each way a server can be wrong gives one error that names
// the endpoint, the cause (errors.Is) and the fix, at once: no retries for
// causes a retry cannot cure.
func TestBadServers(t *testing.T) {
	healthy := map[string]fakeRoute{"/health": {200, ""}, "/version": {200, `{"version":"0.32.0"}`}, "/v1/models": {200, okModels}}
	with := func(extra map[string]fakeRoute) map[string]fakeRoute {
		m := map[string]fakeRoute{}
		for k, v := range healthy {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	complete := func(c *Client) error {
		_, err := c.Complete(context.Background(), CompletionRequest{Model: "tiny", Prompt: []int32{1, 2}, Sampling: Sampling{MaxTokens: 4}})
		return err
	}
	tokenize := func(c *Client) error {
		_, err := c.Tokenize(context.Background(), TokenizeRequest{Model: "tiny", Messages: []Message{{Role: "user", Content: "hi"}}})
		return err
	}
	preflight := func(c *Client) error {
		_, err := c.Preflight(context.Background(), "tiny")
		return err
	}
	load := func(c *Client) error {
		return c.LoadLoRA(context.Background(), "step-1", "/runs/r/checkpoints/step-000001")
	}
	checkLoRA := func(c *Client) error { return c.CheckLoRA(context.Background()) }

	tests := []struct {
		name     string
		routes   map[string]fakeRoute // nil: nothing listens
		op       func(*Client) error
		want     error
		contains []string
		attempts int64 // HTTP exchanges the call may make
	}{
		{"not running: a completion", nil, complete, ErrNotRunning, []string{"connection refused", "start the inference server"}, 1},
		{"not running: preflight", nil, preflight, ErrNotRunning, []string{"/health", "policy.endpoints"}, 1},
		{"dead engine: a completion", with(map[string]fakeRoute{"/v1/completions": {500, vllmError(500, "InternalServerError", deadEngineMsg, nil)}}),
			complete, ErrEngineDead, []string{"HTTP 500", "EngineCore", "restart the server", "--no-enable-chunked-prefill"}, 1},
		{"dead engine: preflight", with(map[string]fakeRoute{"/health": {503, ""}}), preflight, ErrEngineDead, []string{"HTTP 503", "restart"}, 1},
		{"another model: a completion", with(map[string]fakeRoute{"/v1/completions": {404, vllmError(404, "NotFoundError", "The model `tiny` does not exist. Valid aliases: Qwen/Qwen3-0.6B.", "model")}}),
			complete, ErrModelNotServed, []string{"does not exist", "policy.model", "--served-model-name"}, 1},
		{"another model: a tokenization", with(map[string]fakeRoute{"/tokenize": {404, vllmError(404, "NotFoundError", "The model `tiny` does not exist. Valid aliases: Qwen/Qwen3-0.6B.", "model")}}),
			tokenize, ErrModelNotServed, []string{"/tokenize", "policy.model"}, 1},
		{"another model: preflight", with(map[string]fakeRoute{"/v1/models": {200, strings.Replace(okModels, `"tiny"`, `"Qwen/Qwen3-0.6B"`, 1)}}),
			preflight, ErrModelNotServed, []string{`serves ["Qwen/Qwen3-0.6B"], not "tiny"`, "policy.model"}, 3},
		{"no LoRA routes (no VLLM_ALLOW_RUNTIME_LORA_UPDATING)", healthy, load, ErrLoRADisabled,
			[]string{"HTTP 404", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "--enable-lora"}, 1},
		{"LoRA not enabled (no --enable-lora)", with(map[string]fakeRoute{"/v1/load_lora_adapter": {500, vllmError(500, "InternalServerError", "Call to add_lora method failed: LoRA is not enabled. Use --enable-lora to enable LoRA.", nil)}}),
			load, ErrLoRADisabled, []string{"--enable-lora --max-lora-rank"}, 1},
		{"no LoRA routes: the check before a run", healthy, checkLoRA, ErrLoRADisabled,
			[]string{"HTTP 404", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "--enable-lora"}, 1},
		{"LoRA not enabled: the check before a run", with(map[string]fakeRoute{"/v1/load_lora_adapter": {500, vllmError(500, "InternalServerError", "Call to add_lora method failed: LoRA is not enabled. Use --enable-lora to enable LoRA.", nil)}}),
			checkLoRA, ErrLoRADisabled, []string{"--enable-lora --max-lora-rank"}, 1},
		{"adapter path missing", with(map[string]fakeRoute{"/v1/load_lora_adapter": {404, vllmError(404, "NotFoundError", "Loading lora step-1 failed: No adapter found for /runs/r/checkpoints/step-000001", nil)}}),
			load, ErrAdapterNotFound, []string{"No adapter found", "from /runs/r/checkpoints/step-000001", "same path"}, 1},
		{"LoRA rank above --max-lora-rank", with(map[string]fakeRoute{"/v1/load_lora_adapter": {500, vllmError(500, "InternalServerError", "LoRA rank 32 is greater than max_lora_rank 16.", nil)}}),
			load, ErrLoRARank, []string{"--max-lora-rank at least trainer.lora_r"}, 1},
		{"older than return_token_ids: a completion", with(map[string]fakeRoute{"/v1/completions": {200, `{"id":"c","object":"text_completion","created":1,"model":"tiny","choices":[{"index":0,"text":"x","logprobs":{"token_logprobs":[-1]},"finish_reason":"length"}]}`}}),
			complete, ErrNoTokenIDs, []string{"0.10.2"}, 1},
		{"older than return_token_ids: preflight", with(map[string]fakeRoute{"/version": {200, `{"version":"0.9.2"}`}}),
			preflight, ErrServerTooOld, []string{"vLLM 0.9.2", "upgrade vLLM to 0.10.2"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := ""
			if tt.routes == nil {
				url = refusedURL(t)
			} else {
				srv, _ := vllmShaped(t, tt.routes)
				url = srv.URL
			}
			opts := testOptions(url)
			opts.Retry.BackoffBase, opts.Retry.BackoffMax = 50*time.Millisecond, time.Second
			c := newTestClient(t, opts)
			start := time.Now()
			err := tt.op(c)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want one that is %v", err, tt.want)
			}
			msg := err.Error()
			for _, w := range append(tt.contains, url) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if n := c.Stats().Attempts; n > tt.attempts {
				t.Errorf("%d HTTP attempts, want at most %d (no retries for this cause)", n, tt.attempts)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v to fail, want it at once", d)
			}
		})
	}
}

// TestCheckLoRA: the check passes on a server that can load adapters at
// run time, whatever it makes of the path that does not exist, and leaves
// no adapter loaded.
func TestCheckLoRA(t *testing.T) {
	notFound := vllmError(404, "NotFoundError", "Loading lora parley-lora-check failed: No adapter found for /nonexistent/parley-lora-check", nil)
	for _, tt := range []struct {
		name       string
		load       fakeRoute
		wantUnload bool
	}{
		{"vLLM: no adapter at that path", fakeRoute{404, notFound}, false},
		{"a server that checks no paths loads it", fakeRoute{200, "Success: LoRA adapter 'parley-lora-check' added successfully."}, true},
		{"already loaded", fakeRoute{400, vllmError(400, "InvalidUserInput", "The lora adapter 'parley-lora-check' has already been loaded.", nil)}, true},
		{"an answer it cannot read is not judged", fakeRoute{500, vllmError(500, "InternalServerError", "something else", nil)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var unloads atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case pathLoadLoRA:
					w.WriteHeader(tt.load.status)
					io.WriteString(w, tt.load.body)
				case pathUnloadLoRA:
					unloads.Add(1)
					io.WriteString(w, "Success")
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c := newTestClient(t, testOptions(srv.URL))
			if err := c.CheckLoRA(context.Background()); err != nil {
				t.Fatalf("CheckLoRA = %v", err)
			}
			if got := unloads.Load() > 0; got != tt.wantUnload {
				t.Errorf("unloaded: %v, want %v", got, tt.wantUnload)
			}
		})
	}
}

// TestDeadEngineFailsOverToAnotherEndpoint: a dead endpoint is taken out
// of rotation and the request is served by a live one.
func TestDeadEngineFailsOverToAnotherEndpoint(t *testing.T) {
	dead, deadHits := vllmShaped(t, map[string]fakeRoute{"/v1/completions": {500, vllmError(500, "InternalServerError", deadEngineMsg, nil)}})
	good := newFakeVLLM(t)
	c := newTestClient(t, testOptions(dead.URL, good.srv.URL))
	for i := 0; i < 6; i++ {
		if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
			t.Fatalf("Complete #%d = %v, want the live endpoint to answer", i, err)
		}
	}
	if n := deadHits.Load(); n != 1 || !c.Stats().Endpoints[0].Down {
		t.Errorf("dead endpoint got %d requests and down=%v, want 1 and down", n, c.Stats().Endpoints[0].Down)
	}
}

// TestRefusedAfterAnsweringIsRetried: a server that has answered before
// and now refuses connections is restarting; that is retried, not named
// "not running".
func TestRefusedAfterAnsweringIsRetried(t *testing.T) {
	srv, _ := vllmShaped(t, map[string]fakeRoute{"/health": {200, ""}})
	c := newTestClient(t, testOptions(srv.URL))
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	waits := recordSleeps(c)
	err := complete1(c)
	if err == nil || errors.Is(err, ErrNotRunning) || len(*waits) != DefaultRetry.MaxRetries {
		t.Errorf("after the server went away: %v after %d retries; want the retry budget spent (%d) and no ErrNotRunning", err, len(*waits), DefaultRetry.MaxRetries)
	}
}

func complete1(c *Client) error {
	_, err := c.Complete(context.Background(), simpleRequest())
	return err
}

// TestPreflightAndVersion reads what a healthy server reports.
func TestPreflightAndVersion(t *testing.T) {
	srv, _ := vllmShaped(t, map[string]fakeRoute{"/health": {200, ""}, "/version": {200, `{"version":"0.32.0"}`}, "/v1/models": {200, okModels}})
	noVersion, _ := vllmShaped(t, map[string]fakeRoute{"/health": {200, ""}, "/v1/models": {200, okModels}})
	c := newTestClient(t, testOptions(srv.URL, noVersion.URL))
	info, err := c.Preflight(context.Background(), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if len(info) != 2 || info[0].Version != "0.32.0" || info[1].Version != "" || fmt.Sprint(info[0].Models) != "[tiny]" || info[0].Endpoint != srv.URL {
		t.Errorf("Preflight = %+v", info)
	}
	v, err := c.Version(context.Background())
	if err != nil || fmt.Sprint(v) != "[0.32.0 ]" {
		t.Errorf("Version = %q, %v", v, err)
	}
}

func TestTooOld(t *testing.T) {
	for v, want := range map[string]bool{"0.9.2": true, "0.10.1.1": true, "0.10.2": false, "0.10.2rc1.dev3+g12": false,
		"0.11.0+sim": false, "0.32.0": false, "1.0.0": false, "": false, "dev": false, "0.8": true} {
		if got := tooOld(v); got != want {
			t.Errorf("tooOld(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestMessageReasoningJSON: reasoning goes out under both names, and not
// at all when unset.
func TestMessageReasoningJSON(t *testing.T) {
	empty := ""
	for _, tc := range []struct {
		m    Message
		want string
	}{
		{Message{Role: "user", Content: "hi"}, `{"role":"user","content":"hi"}`},
		{Message{Role: "assistant", Content: "x", Reasoning: &empty}, `{"role":"assistant","content":"x","reasoning":"","reasoning_content":""}`},
	} {
		b, err := tc.m.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("MarshalJSON(%+v) = %s, %v; want %s", tc.m, b, err, tc.want)
		}
	}
}
