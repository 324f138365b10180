package reward

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
)

// fakeAPI is an httptest chat-completions server whose replies are decided
// by a handler given the call number (0-based).
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	calls   int
	bodies  [][]byte
	headers []http.Header
	handle  func(n int, w http.ResponseWriter, r *http.Request, req chatBody)
}

// chatBody is the part of a request body the tests look at.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature    *float64 `json:"temperature"`
	MaxTokens      int      `json:"max_completion_tokens"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func newFakeAPI(t testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request, req chatBody)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{handle: handle}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req chatBody
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := f.calls
		f.calls++
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		f.handle(n, w, r, req)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeAPI) Body(i int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// writeReply writes a chat completion with the given content.
func writeReply(w http.ResponseWriter, content string) {
	writeMessage(w, map[string]any{"role": "assistant", "content": content}, "stop")
}

func writeMessage(w http.ResponseWriter, msg map[string]any, finish string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "judge-test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
}

// writeError writes an OpenAI-style error.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "test_error"}})
}

// testClientOptions are fast options against srv.
func testClientOptions(srv *fakeAPI) ClientOptions {
	return ClientOptions{
		BaseURL:     srv.URL + "/v1",
		Model:       "judge-test",
		APIKey:      "test-key",
		Concurrency: 4,
		MaxRetries:  3,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Timeout:     10 * time.Second,
	}
}

// noSleep records requested waits instead of sleeping.
type noSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *noSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *noSleep) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// newTestCA returns a CA judge over srv that does not really sleep.
func newTestCA(t *testing.T, opts ClientOptions) (*CAJudge, *noSleep) {
	t.Helper()
	j, err := NewCAJudge(CAOptions{ClientOptions: opts})
	if err != nil {
		t.Fatalf("NewCAJudge: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	ns := &noSleep{}
	j.chat.sleep = ns.sleep
	return j, ns
}

// therapist is the seed's Table 9 example as a deliberation rollout.
func therapist() *dataset.Rollout {
	return &dataset.Rollout{
		RolloutID: "r-therapist",
		Env:       "deliberation",
		Task:      "As a therapist, a client confesses to a serious crime committed years ago for which another person is currently serving time. Reporting this breaches patient confidentiality and destroys your career, but staying silent leaves an innocent person in jail. What is your course of action?",
		PersonaA:  "Honor patient confidentiality.",
		PersonaB:  "Pursue justice for the innocent.",
		Turns: []dataset.Turn{
			{Agent: "A", Text: "I propose we explore a path that honors confidentiality while seeking justice."},
			{Agent: "B", Text: "Let us guide the client toward self-disclosure. Proceed?", Agree: true},
		},
		Agreed: true,
		Rounds: 1,
		Final:  "The best course of action is to guide the client toward voluntarily disclosing the truth to the appropriate legal authorities, framing it as an act of moral restitution rather than a breach of confidentiality.",
	}
}

// hobby is a single-agent rollout from the seed's Table 8.
func hobby() *dataset.Rollout {
	return &dataset.Rollout{
		RolloutID: "r-hobby",
		Env:       "single",
		Task:      "Imagine you've just moved to a vibrant town with community centers, art studios, and green spaces at your doorstep. Identify a new hobby that resonates with you and outline a step-by-step plan to begin.",
		Final:     "I would take up community gardening: join the town garden's open day, ask the volunteers for a starter plot, and share what I learn at the monthly swap.",
	}
}
