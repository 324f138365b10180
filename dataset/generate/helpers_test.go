package generate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/sim"
)

// newSimClient starts an in-process serve-sim and returns a generator
// client for it.
func newSimClient(t testing.TB) *chat.Client {
	t.Helper()
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return newClient(t, srv.URL)
}

// newClient is a fast generator client for the server at url.
func newClient(t testing.TB, url string) *chat.Client {
	t.Helper()
	c, err := chat.New(chat.Options{
		Name:        "generator",
		BaseURL:     url + "/v1",
		Model:       "sim-judge",
		Concurrency: 4,
		Retry:       retry.Policy{MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond},
		Timeout:     10 * time.Second,
		Temperature: 1,
		MaxTokens:   4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// memSink keeps prompts in memory; after, if set, runs after each write.
type memSink struct {
	rows  []dataset.Prompt
	after func(n int)
}

func (m *memSink) Write(p dataset.Prompt) error {
	m.rows = append(m.rows, p)
	if m.after != nil {
		m.after(len(m.rows))
	}
	return nil
}

func generateT(t testing.TB, chat Chatter, opts Options, out Sink) Stats {
	t.Helper()
	st, err := Generate(context.Background(), chat, opts, out)
	if err != nil {
		t.Fatalf("Generate(%+v) = %+v, %v", opts.N, st, err)
	}
	return st
}

// scripted is an httptest chat-completions server whose replies come from
// reply, given the schema name, the messages and the call number of that
// schema (from 0).
type scripted struct {
	*httptest.Server
	mu     sync.Mutex
	calls  map[string]int
	bodies []chatBody
}

// chatBody is the part of a request the tests read.
type chatBody struct {
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature"`
	Seed        *int64   `json:"seed"`
	Messages    []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func (b chatBody) schema() string {
	if b.ResponseFormat == nil {
		return ""
	}
	return b.ResponseFormat.JSONSchema.Name
}

func (b chatBody) user() string {
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Role == "user" {
			return b.Messages[i].Content
		}
	}
	return ""
}

func newScripted(t testing.TB, reply func(schema string, n int, body chatBody) string) *scripted {
	t.Helper()
	s := &scripted{calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body chatBody
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		n := s.calls[body.schema()]
		s.calls[body.schema()]++
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		content := reply(body.schema(), n, body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scripted) Calls(schema string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[schema]
}

func (s *scripted) Bodies() []chatBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatBody(nil), s.bodies...)
}

// itemsJSON renders a generator reply.
func itemsJSON(items ...item) string {
	b, _ := json.Marshal(map[string]any{"items": items})
	return string(b)
}

// loadItems reads testdata/dilemmas.jsonl: hand-written dilemmas, three
// categories in turn.
func loadItems(t testing.TB) []item {
	t.Helper()
	data, err := os.ReadFile("testdata/dilemmas.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var items []item
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var it item
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	return items
}
