package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// loraServer imitates vLLM's runtime LoRA routes.
type loraServer struct {
	srv    *httptest.Server
	flat   bool // answer errors in the older flat shape
	mu     sync.Mutex
	loaded map[string]string
	calls  int
}

func newLoRAServer(t *testing.T, flat bool) *loraServer {
	t.Helper()
	s := &loraServer{flat: flat, loaded: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *loraServer) fail(w http.ResponseWriter, status int, typ, msg string) {
	var body any = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}}
	if s.flat {
		body = map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": status}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func (s *loraServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, 400, "InvalidUserInput", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	switch r.URL.Path {
	case pathLoadLoRA:
		if _, ok := s.loaded[req.Name]; ok {
			s.fail(w, 400, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", req.Name))
			return
		}
		s.loaded[req.Name] = req.Path
		fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
	case pathUnloadLoRA:
		if _, ok := s.loaded[req.Name]; !ok {
			s.fail(w, 404, "NotFoundError", fmt.Sprintf("The lora adapter '%s' cannot be found.", req.Name))
			return
		}
		delete(s.loaded, req.Name)
		fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"detail":"Not Found"}`))
	}
}

func (s *loraServer) has(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.loaded[name]
	return p, ok
}

func TestLoRALoadUnloadOnEveryEndpoint(t *testing.T) {
	servers := []*loraServer{newLoRAServer(t, false), newLoRAServer(t, true), newLoRAServer(t, false)}
	c := newTestClient(t, testOptions(servers[0].srv.URL, servers[1].srv.URL, servers[2].srv.URL))
	ctx := context.Background()

	// One endpoint already has the adapter (a resumed run).
	servers[1].loaded["step-7"] = "/ckpt/step-7"
	if err := c.LoadLoRA(ctx, "step-7", "/ckpt/step-7"); err != nil {
		t.Fatalf("LoadLoRA = %v", err)
	}
	if err := c.LoadLoRA(ctx, "step-7", "/ckpt/step-7"); err != nil {
		t.Fatalf("LoadLoRA again (already loaded everywhere) = %v, want nil", err)
	}
	for i, s := range servers {
		if p, ok := s.has("step-7"); !ok || p != "/ckpt/step-7" {
			t.Errorf("server %d has step-7 = %q, %v; want /ckpt/step-7", i, p, ok)
		}
	}
	if err := c.UnloadLoRA(ctx, "step-7"); err != nil {
		t.Fatalf("UnloadLoRA = %v", err)
	}
	if err := c.UnloadLoRA(ctx, "step-7"); err != nil {
		t.Fatalf("UnloadLoRA again (nowhere loaded) = %v, want nil", err)
	}
	for i, s := range servers {
		if _, ok := s.has("step-7"); ok {
			t.Errorf("server %d still has step-7 after UnloadLoRA", i)
		}
	}
	if s := c.Stats(); s.Retries != 0 {
		t.Errorf("Stats.Retries = %d, want 0 (idempotent answers are not retried)", s.Retries)
	}
}

func TestLoRAErrors(t *testing.T) {
	good := newLoRAServer(t, false)
	noRoutes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"detail":"Not Found"}`))
	}))
	t.Cleanup(noRoutes.Close)
	c := newTestClient(t, testOptions(good.srv.URL, noRoutes.URL))
	err := c.LoadLoRA(context.Background(), "a", "/p")
	if err == nil || !strings.Contains(err.Error(), noRoutes.URL) || strings.Contains(err.Error(), good.srv.URL) ||
		!strings.Contains(err.Error(), "VLLM_ALLOW_RUNTIME_LORA_UPDATING") {
		t.Errorf("LoadLoRA with one endpoint lacking LoRA routes = %v, want an error naming only %s with the hint", err, noRoutes.URL)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Errorf("LoadLoRA error %v does not unwrap to a 404 *APIError", err)
	}
	// A missing route must not pass for "adapter not found" on unload.
	if err := c.UnloadLoRA(context.Background(), "a"); err == nil || !strings.Contains(err.Error(), noRoutes.URL) {
		t.Errorf("UnloadLoRA with a missing route = %v, want an error naming %s", err, noRoutes.URL)
	}
	if err := c.LoadLoRA(context.Background(), "", "/p"); err == nil {
		t.Error("LoadLoRA with an empty name = nil error")
	}
}

func TestIsAlreadyLoadedAndNotFound(t *testing.T) {
	tests := []struct {
		e        APIError
		already  bool
		notFound bool
	}{
		{APIError{Status: 400, Message: "The lora adapter 'x' has already been loaded."}, true, false},
		{APIError{Status: 400, Message: "Both 'lora_name' and 'lora_path' must be provided."}, false, false},
		{APIError{Status: 500, Message: "already loaded"}, false, false},
		{APIError{Status: 404, Message: "The lora adapter 'x' cannot be found."}, false, true},
		{APIError{Status: 400, Message: "The lora adapter 'x' cannot be found."}, false, true},
		{APIError{Status: 404, Message: "Not Found"}, false, false},
	}
	for _, tt := range tests {
		if got := isAlreadyLoaded(&tt.e); got != tt.already {
			t.Errorf("isAlreadyLoaded(%+v) = %v, want %v", tt.e, got, tt.already)
		}
		if got := isAdapterNotFound(&tt.e); got != tt.notFound {
			t.Errorf("isAdapterNotFound(%+v) = %v, want %v", tt.e, got, tt.notFound)
		}
	}
}

func TestMetrics(t *testing.T) {
	fixture, err := os.ReadFile("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != pathMetrics {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(fixture)
	}))
	t.Cleanup(vllm.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# nothing here\nprocess_cpu_seconds_total 3\n"))
	}))
	t.Cleanup(other.Close)
	c := newTestClient(t, testOptions(vllm.URL, other.URL))
	got, err := c.Metrics(context.Background())
	if err == nil || !strings.Contains(err.Error(), other.URL) || strings.Contains(err.Error(), vllm.URL) {
		t.Errorf("Metrics error = %v, want one naming only %s", err, other.URL)
	}
	if len(got) != 2 {
		t.Fatalf("Metrics returned %d entries, want 2", len(got))
	}
	if g := got[0]; g.Endpoint != vllm.URL || g.Running != 78 || g.Waiting != 5 || g.Err != nil {
		t.Errorf("Metrics()[0] = %+v, want running 78, waiting 5", g)
	}
	if g := got[1]; g.Endpoint != other.URL || !errors.Is(g.Err, ErrBadResponse) {
		t.Errorf("Metrics()[1] = %+v, want Err wrapping ErrBadResponse", g)
	}
}

func TestParseVLLMLoad(t *testing.T) {
	tests := []struct {
		in      string
		want    vllmLoad
		wantErr bool
	}{
		{"vllm:num_requests_running 3\nvllm:num_requests_waiting 4\n", vllmLoad{Running: 3, Waiting: 4}, false},
		{"vllm:num_requests_running{a=\"}\"} 2 1700000000000\r\n", vllmLoad{Running: 2, Waiting: 0}, false},
		{"vllm:num_requests_running{a=\"x\\\"}\"} 1\nvllm:num_requests_running{a=\"y\"} 1.5", vllmLoad{Running: 2.5, Waiting: 0}, false},
		{"vllm:num_requests_waiting_by_reason{reason=\"x\"} 9\nvllm:num_requests_waiting 1", vllmLoad{Running: 0, Waiting: 1}, false},
		{"# HELP vllm:num_requests_running x\n", vllmLoad{}, true},
		{"vllm:num_requests_running{a=\"1\" 3", vllmLoad{}, true},
		{"vllm:num_requests_running abc", vllmLoad{}, true},
		{"vllm:num_requests_running 1\nvllm:prefix_cache_queries_total{engine=\"0\"} 160.0\nvllm:prefix_cache_hits_total{engine=\"0\"} 96.0\n" +
			"sim_session_header_total{present=\"false\"} 2.0\nsim_session_header_total{present=\"true\"} 7.0\n",
			vllmLoad{Running: 1, PrefixQueries: 160, PrefixHits: 96, NoSessionHeader: 2}, false},
		{"vllm:prefix_cache_queries_total 160.0\n", vllmLoad{}, true},
	}
	for _, tt := range tests {
		got, err := parseVLLMLoad([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseVLLMLoad(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTokenize(t *testing.T) {
	var gotBody map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != pathTokenize || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &gotBody)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"count":4,"max_model_len":32768,"tokens":[151644, 872,198,9707],"token_strs":null}`))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, testOptions(srv.URL))
	req := TokenizeRequest{
		Model:               "policy",
		Messages:            []Message{{Role: "system", Content: "You are <A> & \"fair\""}, {Role: "user", Content: "hi"}},
		AddGenerationPrompt: false,
		ChatTemplateKwargs:  map[string]any{"enable_thinking": false},
	}
	got, err := c.Tokenize(context.Background(), req)
	if err != nil {
		t.Fatalf("Tokenize = %v", err)
	}
	want := TokenizeResult{Tokens: []int32{151644, 872, 198, 9707}, Count: 4, MaxModelLen: 32768}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tokenize = %+v, want %+v", got, want)
	}
	for _, k := range []string{"model", "messages", "add_generation_prompt", "chat_template_kwargs"} {
		if _, ok := gotBody[k]; !ok {
			t.Errorf("tokenize request lacks %q: %v", k, gotBody)
		}
	}
	if string(gotBody["add_generation_prompt"]) != "false" {
		t.Errorf("add_generation_prompt = %s, want false sent explicitly", gotBody["add_generation_prompt"])
	}
	var msgs []Message
	if err := json.Unmarshal(gotBody["messages"], &msgs); err != nil || !reflect.DeepEqual(msgs, req.Messages) {
		t.Errorf("messages sent = %s, want %+v", gotBody["messages"], req.Messages)
	}
}

func TestTokenizeBadResponses(t *testing.T) {
	tests := []struct{ name, body string }{
		{"count mismatch", `{"count":3,"max_model_len":10,"tokens":[1,2]}`},
		{"no tokens", `{"count":0,"max_model_len":10}`},
		{"float token", `{"count":1,"max_model_len":10,"tokens":[1.5]}`},
		{"token overflows int32", `{"count":1,"max_model_len":10,"tokens":[2147483648]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serveFixed(t, http.StatusOK, []byte(tt.body))
			c := newTestClient(t, testOptions(f.srv.URL))
			_, err := c.Tokenize(context.Background(), TokenizeRequest{Messages: []Message{{Role: "user", Content: "x"}}})
			if !errors.Is(err, ErrBadResponse) {
				t.Errorf("Tokenize(%s) = %v, want ErrBadResponse", tt.body, err)
			}
		})
	}
}

func TestModels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","max_model_len":32768},{"id":"step-3","object":"model","parent":"Qwen/Qwen3-8B"}]}`))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, testOptions(srv.URL))
	got, err := c.Models(context.Background())
	if err != nil || !reflect.DeepEqual(got, []string{"Qwen/Qwen3-8B", "step-3"}) {
		t.Errorf("Models = %q, %v; want [Qwen/Qwen3-8B step-3]", got, err)
	}
}

func TestAPIKeySentAndNeverLogged(t *testing.T) {
	const key = "sk-very-secret-123"
	f := newFakeVLLM(t)
	var mu sync.Mutex
	var auths []string
	f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if hit == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	core, logs := observer.New(zap.DebugLevel)
	opts := testOptions(f.srv.URL)
	opts.APIKey = key
	opts.Logger = zap.New(core)
	c := newTestClient(t, opts)
	if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Complete = %v", err)
	}
	for _, a := range auths {
		if a != "Bearer "+key {
			t.Errorf("Authorization = %q, want the bearer key", a)
		}
	}
	if logs.Len() == 0 {
		t.Fatal("no log entries for a retry, want one")
	}
	for _, e := range logs.All() {
		line := fmt.Sprintf("%s %v", e.Message, e.ContextMap())
		if strings.Contains(line, key) {
			t.Errorf("log entry %q contains the API key", line)
		}
	}
}

// TestSetStartingQuiet: while the servers start (SetStarting), an endpoint
// whose health check fails is taken out of rotation, and put back when it
// passes, at debug level; otherwise with a warning and an info line.
func TestSetStartingQuiet(t *testing.T) {
	for _, tt := range []struct {
		starting       bool
		wantWarn, want int // warnings, and entries at info or above
	}{
		{starting: true, wantWarn: 0, want: 0},
		{starting: false, wantWarn: 1, want: 2},
	} {
		var up atomic.Bool
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !up.Load() {
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		core, logs := observer.New(zap.DebugLevel)
		opts := testOptions(srv.URL)
		opts.Logger = zap.New(core)
		c := newTestClient(t, opts)
		c.SetStarting(tt.starting)
		if err := c.Health(context.Background()); err == nil {
			t.Fatalf("starting %v: Health of a server answering 503 = nil", tt.starting)
		}
		up.Store(true)
		if err := c.Health(context.Background()); err != nil {
			t.Fatalf("starting %v: Health = %v", tt.starting, err)
		}
		srv.Close()
		down, back := logs.FilterMessage("llm: endpoint taken out of rotation").All(), logs.FilterMessage("llm: endpoint back in rotation").All()
		if len(down) != 1 || len(back) != 1 {
			t.Fatalf("starting %v: %d out-of-rotation and %d back-in-rotation entries, want one each", tt.starting, len(down), len(back))
		}
		warn, loud := 0, 0
		for _, e := range logs.All() {
			if e.Level >= zap.WarnLevel {
				warn++
			}
			if e.Level >= zap.InfoLevel {
				loud++
			}
		}
		if warn != tt.wantWarn || loud != tt.want {
			t.Errorf("starting %v: %d warnings and %d entries at info or above, want %d and %d", tt.starting, warn, loud, tt.wantWarn, tt.want)
		}
	}
}
