package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/retry"
)

// testOptions returns options with millisecond backoffs for tests.
func testOptions(urls ...string) Options {
	return Options{
		Endpoints:      urls,
		RequestTimeout: 10 * time.Second,
		JitterSeed:     1,
		Retry:          retry.Policy{BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond},
	}
}

func newTestClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v) = %v", opts, err)
	}
	t.Cleanup(c.Close)
	return c
}

// completionRequestBody is what a fake server reads from a completion.
type completionRequestBody struct {
	Prompt []int32 `json:"prompt"`
	N      int     `json:"n"`
}

// completionJSON renders a vLLM-shaped completion response whose choices
// each carry ids, with logprob -0.5 per token.
func completionJSON(prompt []int32, n int, ids []int32) []byte {
	type logprobs struct {
		TextOffset    []int                `json:"text_offset"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		Tokens        []string             `json:"tokens"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	}
	type choice struct {
		Index          int      `json:"index"`
		Text           string   `json:"text"`
		Logprobs       logprobs `json:"logprobs"`
		FinishReason   string   `json:"finish_reason"`
		StopReason     any      `json:"stop_reason"`
		TokenIDs       []int32  `json:"token_ids"`
		PromptTokenIDs []int32  `json:"prompt_token_ids"`
	}
	if n < 1 {
		n = 1
	}
	var lp logprobs
	for i, id := range ids {
		tok := fmt.Sprintf("token_id:%d", id)
		lp.TextOffset = append(lp.TextOffset, i*len(tok))
		lp.TokenLogprobs = append(lp.TokenLogprobs, -0.5)
		lp.Tokens = append(lp.Tokens, tok)
		lp.TopLogprobs = append(lp.TopLogprobs, map[string]float64{tok: -0.5})
	}
	resp := map[string]any{
		"id": "cmpl-test", "object": "text_completion", "created": 1757400000, "model": "policy",
		"usage": map[string]int{"prompt_tokens": len(prompt), "completion_tokens": n * len(ids), "total_tokens": len(prompt) + n*len(ids)},
	}
	var choices []choice
	for i := 0; i < n; i++ {
		choices = append(choices, choice{Index: i, Text: "text", Logprobs: lp, FinishReason: "length", TokenIDs: ids, PromptTokenIDs: prompt})
	}
	resp["choices"] = choices
	b, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	return b
}

// fakeVLLM answers completions correctly and counts what it sees.
type fakeVLLM struct {
	srv         *httptest.Server
	hits        atomic.Int64 // completion requests
	inflight    atomic.Int64
	maxInflight atomic.Int64
	// before, when set, runs first and may answer instead (returning true).
	before func(w http.ResponseWriter, r *http.Request, hit int64) bool
	// delay holds each completion this long (or until the client gives up).
	delay time.Duration

	mu     sync.Mutex
	bodies [][]byte
}

func newFakeVLLM(t *testing.T) *fakeVLLM {
	t.Helper()
	f := &fakeVLLM{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeVLLM) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		w.WriteHeader(http.StatusOK)
		return
	case pathCompletions, pathTokenize:
	default:
		http.NotFound(w, r)
		return
	}
	hit := f.hits.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if f.before != nil && f.before(w, r, hit) {
		return
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	var req completionRequestBody
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(completionJSON(req.Prompt, req.N, []int32{11, 12, 13}))
}

func (f *fakeVLLM) lastBody() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return nil
	}
	return f.bodies[len(f.bodies)-1]
}

// simpleRequest is a small valid completion request.
func simpleRequest() CompletionRequest {
	return CompletionRequest{Model: "policy", Prompt: []int32{1, 2, 3}, Sampling: Sampling{MaxTokens: 8, Temperature: 1}}
}

// hangUntilDone blocks a handler until the client goes away.
func hangUntilDone(r *http.Request) {
	<-r.Context().Done()
}

// recordSleeps replaces c's sleep with one that records and does not wait.
func recordSleeps(c *Client) *[]time.Duration {
	var mu sync.Mutex
	waits := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return waits
}
