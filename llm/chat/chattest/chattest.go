// Package chattest holds test doubles for OpenAI-compatible chat APIs: an
// httptest chat-completions server whose replies a test decides per call,
// reply writers in the API's shapes, and a sleep that records waits instead
// of sleeping (chat.Options.Sleep).
package chattest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Body is the part of a chat-completions request body tests look at.
type Body struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature    *float64 `json:"temperature"`
	MaxTokens      int      `json:"max_completion_tokens"`
	Seed           *int64   `json:"seed"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// Handler answers call n (0-based) of a FakeAPI.
type Handler func(n int, w http.ResponseWriter, r *http.Request, req Body)

// FakeAPI is an httptest server of /v1/chat/completions whose replies a
// Handler decides; it records every request body and header.
type FakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	calls   int
	bodies  [][]byte
	headers []http.Header
	handle  Handler
}

// NewFakeAPI starts a FakeAPI, closed when the test ends.
func NewFakeAPI(t testing.TB, handle Handler) *FakeAPI {
	t.Helper()
	f := &FakeAPI{handle: handle}
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
		var req Body
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

// Calls is the number of requests answered so far.
func (f *FakeAPI) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Body is the raw body of request i.
func (f *FakeAPI) Body(i int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// Header is the header of request i.
func (f *FakeAPI) Header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

// WriteReply writes a chat completion whose assistant message is content.
func WriteReply(w http.ResponseWriter, content string) {
	WriteMessage(w, map[string]any{"role": "assistant", "content": content}, "stop")
}

// WriteMessage writes a chat completion with one choice holding msg.
func WriteMessage(w http.ResponseWriter, msg map[string]any, finish string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "judge-test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
}

// WriteError writes an OpenAI-style error with status code.
func WriteError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "test_error"}})
}

// NoSleep records requested waits instead of sleeping; its Sleep method
// fits chat.Options.Sleep.
type NoSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Sleep records d and returns at once (ctx's error, if any).
func (s *NoSleep) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Waits returns the waits recorded so far.
func (s *NoSleep) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}
