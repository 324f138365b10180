package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// startServer runs a simulator behind a real HTTP server for one test.
func startServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close) // runs first: releases hangs and sleeps
	return srv, ts
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// post sends a JSON body and returns the answer, or the transport error.
func post(c *http.Client, url string, body any) (httpResult, error) {
	buf, err := json.Marshal(body)
	if err != nil {
		return httpResult{}, err
	}
	resp, err := c.Post(url, "application/json", bytes.NewReader(buf))
	if err != nil {
		return httpResult{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return httpResult{status: resp.StatusCode, header: resp.Header, body: raw}, err
}

// mustPost requires a 200 answer and decodes it into v.
func mustPost(t *testing.T, url string, body, v any) {
	t.Helper()
	r, err := post(http.DefaultClient, url, body)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	if r.status != http.StatusOK {
		t.Fatalf("POST %s = %d %s, want 200", url, r.status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("POST %s: decode %s: %v", url, r.body, err)
		}
	}
}

func tokenizeHTTP(t *testing.T, base string, msgs []Message, kwargs map[string]any) []int32 {
	t.Helper()
	var res tokenizeResponse
	mustPost(t, base+PathTokenize, map[string]any{"messages": msgs, "add_generation_prompt": true,
		"chat_template_kwargs": kwargs}, &res)
	return res.Tokens
}

// completionReq is a completion request as parley's client sends it.
func completionReq(prompt []int32, maxTokens, n int, seed int64) map[string]any {
	return map[string]any{"model": DefaultModel, "prompt": prompt, "max_tokens": maxTokens, "temperature": 1.0,
		"n": n, "seed": seed, "logprobs": 1, "return_token_ids": true, "return_tokens_as_token_ids": true,
		"skip_special_tokens": false}
}

// choices decodes only the choices of a completion, dropping the id and
// timestamps that legitimately differ between calls.
func choicesOf(t *testing.T, body []byte) []completionChoice {
	t.Helper()
	var res struct {
		Choices []completionChoice `json:"choices"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("decode completion %s: %v", body, err)
	}
	return res.Choices
}

func gameMessages(turns int) []Message {
	msgs := []Message{{Role: "system", Content: "You are Agent B. Persona: Pursue justice for the innocent. " +
		"Task: a client confesses to a crime another person is jailed for. Negotiate; mark acceptance with [AGREE]."},
		{Role: "user", Content: "Agent A: I must honor patient confidentiality."}}
	for i := 0; i < turns; i++ {
		msgs = append(msgs, Message{Role: "assistant", Content: "I hear you. We should protect the innocent person together."},
			Message{Role: "user", Content: "Agent A: Perhaps an anonymous report could work for both of us."})
	}
	return msgs
}

// The JSON shapes of a completion response, for decoding in tests.

type completionLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

type completionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   string              `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	TokenIDs       []int32             `json:"token_ids"`
	PromptLogprobs any                 `json:"prompt_logprobs"`
	PromptTokenIDs []int32             `json:"prompt_token_ids"`
}

type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []completionChoice `json:"choices"`
	ServiceTier       any                `json:"service_tier"`
	SystemFingerprint any                `json:"system_fingerprint"`
	Usage             usageInfo          `json:"usage"`
	KVTransferParams  any                `json:"kv_transfer_params"`
}
