// Package contract is the API contract test suite of parley's policy
// inference server: the subset of vLLM's OpenAI-compatible API that parley
// uses, checked over raw HTTP (not through the llm client) so that the same
// suite runs against the simulator (package sim) and a real vLLM.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// Config names the server under test.
type Config struct {
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8000".
	BaseURL string
	// Model is the served base model name.
	Model string
	// LoRAPath is an adapter path the server can load; the LoRA tests are
	// skipped when it is empty.
	LoRAPath string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
}

// Run runs the contract suite against cfg's server, one subtest per
// contract point.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.BaseURL == "" || cfg.Model == "" {
		t.Fatalf("contract.Run: BaseURL and Model are required (got %q, %q)", cfg.BaseURL, cfg.Model)
	}
	c := &client{cfg: cfg, http: &http.Client{Timeout: 2 * time.Minute}}
	t.Run("health", c.testHealth)
	t.Run("models_lists_model", c.testModels)
	t.Run("tokenize_messages", c.testTokenizeMessages)
	t.Run("tokenize_prefix_extension", c.testPrefixExtension)
	t.Run("detokenize_round_trip", c.testDetokenize)
	t.Run("completion_token_ids_and_logprobs", c.testCompletion)
	t.Run("completion_same_seed_same_tokens", c.testSeed)
	t.Run("completion_n2", c.testN2)
	t.Run("completion_max_tokens_1", c.testMaxTokens1)
	t.Run("completion_unknown_model_error", c.testUnknownModel)
	t.Run("metrics_gauges", c.testMetrics)
	t.Run("lora_lifecycle", c.testLoRA)
}

type client struct {
	cfg  Config
	http *http.Client
}

// response is a raw HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (c *client) do(t *testing.T, method, path string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("%s %s: encode body: %v", method, path, err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, strings.TrimRight(c.cfg.BaseURL, "/")+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

// okJSON requires a 200 answer and decodes it into v.
func (c *client) okJSON(t *testing.T, method, path string, body, v any) {
	t.Helper()
	r := c.do(t, method, path, body)
	if r.status != http.StatusOK {
		t.Fatalf("%s %s = %d %s, want 200", method, path, r.status, snippet(r.body))
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s %s: decode %s: %v", method, path, snippet(r.body), err)
	}
}

func snippet(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type tokenizeResult struct {
	Count       int     `json:"count"`
	MaxModelLen int     `json:"max_model_len"`
	Tokens      []int32 `json:"tokens"`
}

func (c *client) tokenizeMessages(t *testing.T, msgs []message, addGen bool) tokenizeResult {
	t.Helper()
	var res tokenizeResult
	c.okJSON(t, "POST", "/tokenize", map[string]any{
		"model": c.cfg.Model, "messages": msgs, "add_generation_prompt": addGen,
	}, &res)
	return res
}

func (c *client) tokenizeText(t *testing.T, text string) []int32 {
	t.Helper()
	var res tokenizeResult
	c.okJSON(t, "POST", "/tokenize", map[string]any{
		"model": c.cfg.Model, "prompt": text, "add_special_tokens": false,
	}, &res)
	return res.Tokens
}

type logprobs struct {
	TokenLogprobs []*float64 `json:"token_logprobs"`
	Tokens        []string   `json:"tokens"`
}

type choice struct {
	Index          int       `json:"index"`
	Text           string    `json:"text"`
	TokenIDs       []int32   `json:"token_ids"`
	Logprobs       *logprobs `json:"logprobs"`
	FinishReason   string    `json:"finish_reason"`
	PromptTokenIDs []int32   `json:"prompt_token_ids"`
}

type completion struct {
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

var basePrompt = []message{
	{Role: "system", Content: "You are a careful negotiator. Keep replies short."},
	{Role: "user", Content: "Propose a fair way for two roommates to split a shared bill."},
}

// completionBody is the request parley's client sends.
func (c *client) completionBody(model string, prompt []int32, maxTokens, n int, seed int64) map[string]any {
	return map[string]any{
		"model": model, "prompt": prompt, "max_tokens": maxTokens, "temperature": 1.0, "top_p": 1.0,
		"n": n, "seed": seed, "logprobs": 1, "return_token_ids": true, "return_tokens_as_token_ids": true,
		"skip_special_tokens": false,
	}
}

func (c *client) complete(t *testing.T, body map[string]any) completion {
	t.Helper()
	var res completion
	c.okJSON(t, "POST", "/v1/completions", body, &res)
	return res
}

func (c *client) prompt(t *testing.T) []int32 {
	t.Helper()
	return c.tokenizeMessages(t, basePrompt, true).Tokens
}

func (c *client) testHealth(t *testing.T) {
	if r := c.do(t, "GET", "/health", nil); r.status != http.StatusOK {
		t.Fatalf("GET /health = %d %s, want 200", r.status, snippet(r.body))
	}
}

type modelList struct {
	Object string `json:"object"`
	Data   []struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	} `json:"data"`
}

func (c *client) modelIDs(t *testing.T) []string {
	t.Helper()
	var ml modelList
	c.okJSON(t, "GET", "/v1/models", nil, &ml)
	ids := make([]string, len(ml.Data))
	for i, m := range ml.Data {
		ids[i] = m.ID
	}
	return ids
}

func (c *client) testModels(t *testing.T) {
	if ids := c.modelIDs(t); !slices.Contains(ids, c.cfg.Model) {
		t.Fatalf("GET /v1/models ids = %q, want them to include %q", ids, c.cfg.Model)
	}
}

func (c *client) testTokenizeMessages(t *testing.T) {
	res := c.tokenizeMessages(t, basePrompt, true)
	if len(res.Tokens) == 0 {
		t.Fatalf("POST /tokenize (messages) tokens = [], want some")
	}
	if res.Count != len(res.Tokens) {
		t.Errorf("POST /tokenize count = %d, want len(tokens) = %d", res.Count, len(res.Tokens))
	}
	if res.MaxModelLen <= 0 {
		t.Errorf("POST /tokenize max_model_len = %d, want > 0", res.MaxModelLen)
	}
	without := c.tokenizeMessages(t, basePrompt, false)
	if len(without.Tokens) >= len(res.Tokens) || !slices.Equal(res.Tokens[:len(without.Tokens)], without.Tokens) {
		t.Errorf("tokens without the generation prompt (%d) are not a strict prefix of those with it (%d)",
			len(without.Tokens), len(res.Tokens))
	}
}

// testPrefixExtension checks that re-rendering a conversation after an
// assistant reply extends the earlier prompt exactly: the tokens of
// [system, user] + generation prompt, then the reply's tokens and the end of
// turn, begin the tokens of [system, user, assistant, user] + generation
// prompt. This holds for ChatML templates without thinking.
func (c *client) testPrefixExtension(t *testing.T) {
	const reply = "I suggest we split it evenly, and adjust for who used more."
	p := c.tokenizeMessages(t, basePrompt, true).Tokens
	next := append(slices.Clone(basePrompt),
		message{Role: "assistant", Content: reply},
		message{Role: "user", Content: "That works if we both review the bill together."})
	f := c.tokenizeMessages(t, next, true).Tokens
	if len(f) <= len(p) || !slices.Equal(f[:len(p)], p) {
		t.Fatalf("re-rendered tokens (%d) do not extend the earlier prompt (%d): first difference at %d",
			len(f), len(p), firstDiff(f, p))
	}
	r := c.tokenizeText(t, reply)
	end := c.tokenizeText(t, "<|im_end|>")
	if len(end) != 1 {
		t.Logf("<|im_end|> is not one token here (%v); reply-token check skipped", end)
		return
	}
	want := append(slices.Clone(r), end[0])
	got := f[len(p):]
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("tokens after the prompt = %v, want the reply's tokens then <|im_end|> %v", got[:min(len(got), len(want))], want)
	}
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func (c *client) testDetokenize(t *testing.T) {
	const text = "Hello world, this is a round trip."
	toks := c.tokenizeText(t, text)
	var res struct {
		Prompt string `json:"prompt"`
	}
	c.okJSON(t, "POST", "/detokenize", map[string]any{"model": c.cfg.Model, "tokens": toks}, &res)
	switch {
	case res.Prompt == text:
	case strings.TrimSpace(res.Prompt) == text:
		// SentencePiece-style tokenizers may add a leading space.
		t.Logf("detokenize(tokenize(%q)) = %q: equal up to surrounding space", text, res.Prompt)
	default:
		t.Fatalf("detokenize(tokenize(%q)) = %q, want the same text", text, res.Prompt)
	}
}

// checkChoice verifies one choice's token ids and logprobs.
func checkChoice(t *testing.T, ch choice, maxTokens int) {
	t.Helper()
	if ch.TokenIDs == nil {
		t.Fatalf("choice %d: token_ids missing (the server ignores return_token_ids: vLLM < 0.10.2?)", ch.Index)
	}
	if len(ch.TokenIDs) == 0 || len(ch.TokenIDs) > maxTokens {
		t.Errorf("choice %d: len(token_ids) = %d, want 1..%d", ch.Index, len(ch.TokenIDs), maxTokens)
	}
	if ch.Logprobs == nil {
		t.Fatalf("choice %d: logprobs missing with logprobs=1", ch.Index)
	}
	if len(ch.Logprobs.TokenLogprobs) != len(ch.TokenIDs) {
		t.Errorf("choice %d: len(logprobs.token_logprobs) = %d, want len(token_ids) = %d",
			ch.Index, len(ch.Logprobs.TokenLogprobs), len(ch.TokenIDs))
	}
	for i, lp := range ch.Logprobs.TokenLogprobs {
		if lp == nil || *lp > 0 {
			t.Errorf("choice %d: token_logprobs[%d] = %v, want a number <= 0", ch.Index, i, lp)
			break
		}
	}
	if ch.FinishReason != "stop" && ch.FinishReason != "length" {
		t.Errorf("choice %d: finish_reason = %q, want stop or length", ch.Index, ch.FinishReason)
	}
}

func (c *client) testCompletion(t *testing.T) {
	p := c.prompt(t)
	res := c.complete(t, c.completionBody(c.cfg.Model, p, 32, 1, 1234))
	if len(res.Choices) != 1 {
		t.Fatalf("choices = %d, want 1", len(res.Choices))
	}
	checkChoice(t, res.Choices[0], 32)
	if pt := res.Choices[0].PromptTokenIDs; pt != nil && !slices.Equal(pt, p) {
		t.Errorf("prompt_token_ids differ from the prompt sent (%d vs %d tokens)", len(pt), len(p))
	}
	if res.Usage.PromptTokens != len(p) {
		t.Errorf("usage.prompt_tokens = %d, want %d", res.Usage.PromptTokens, len(p))
	}
}

func (c *client) testSeed(t *testing.T) {
	p := c.prompt(t)
	a := c.complete(t, c.completionBody(c.cfg.Model, p, 24, 1, 99))
	b := c.complete(t, c.completionBody(c.cfg.Model, p, 24, 1, 99))
	if len(a.Choices) != 1 || len(b.Choices) != 1 {
		t.Fatalf("choices = %d and %d, want 1", len(a.Choices), len(b.Choices))
	}
	if !slices.Equal(a.Choices[0].TokenIDs, b.Choices[0].TokenIDs) {
		t.Fatalf("seed 99 twice: token_ids %v and %v, want equal", a.Choices[0].TokenIDs, b.Choices[0].TokenIDs)
	}
}

func (c *client) testN2(t *testing.T) {
	res := c.complete(t, c.completionBody(c.cfg.Model, c.prompt(t), 16, 2, 7))
	if len(res.Choices) != 2 {
		t.Fatalf("n=2: choices = %d, want 2", len(res.Choices))
	}
	idx := []int{res.Choices[0].Index, res.Choices[1].Index}
	slices.Sort(idx)
	if idx[0] != 0 || idx[1] != 1 {
		t.Errorf("n=2: choice indexes = %v, want [0 1]", idx)
	}
	for _, ch := range res.Choices {
		checkChoice(t, ch, 16)
	}
}

func (c *client) testMaxTokens1(t *testing.T) {
	res := c.complete(t, c.completionBody(c.cfg.Model, c.prompt(t), 1, 1, 5))
	if len(res.Choices) != 1 {
		t.Fatalf("choices = %d, want 1", len(res.Choices))
	}
	ch := res.Choices[0]
	checkChoice(t, ch, 1)
	if len(ch.TokenIDs) != 1 {
		t.Fatalf("max_tokens=1: len(token_ids) = %d, want 1", len(ch.TokenIDs))
	}
	switch ch.FinishReason {
	case "length":
	case "stop":
		t.Logf("max_tokens=1: the one token ended the turn (finish_reason stop)")
	default:
		t.Errorf("max_tokens=1: finish_reason = %q, want length", ch.FinishReason)
	}
}

// errorMessage extracts the message of either vLLM error shape:
// {"error": {"message": ...}} or the older {"object": "error", "message": ...}.
func errorMessage(body []byte) (string, error) {
	var nested struct {
		Error json.RawMessage `json:"error"`
	}
	var flat struct {
		Object  string `json:"object"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &nested); err == nil && len(nested.Error) > 0 {
		var info struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(nested.Error, &info); err == nil && info.Message != "" {
			return info.Message, nil
		}
	}
	if err := json.Unmarshal(body, &flat); err == nil && flat.Object == "error" && flat.Message != "" {
		return flat.Message, nil
	}
	return "", fmt.Errorf("no error message in %s", snippet(body))
}

func (c *client) testUnknownModel(t *testing.T) {
	const name = "parley-contract-no-such-model"
	r := c.do(t, "POST", "/v1/completions", c.completionBody(name, c.prompt(t), 4, 1, 1))
	if r.status < 400 || r.status > 499 {
		t.Fatalf("completion with model %q = %d, want 4xx", name, r.status)
	}
	msg, err := errorMessage(r.body)
	if err != nil {
		t.Fatalf("completion with model %q: %v", name, err)
	}
	if !strings.Contains(msg, name) {
		t.Logf("error message does not name the model: %q", msg)
	}
}

func (c *client) testMetrics(t *testing.T) {
	r := c.do(t, "GET", "/metrics", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200", r.status)
	}
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting"} {
		if !bytes.Contains(r.body, []byte(name)) {
			t.Errorf("GET /metrics lacks %s", name)
		}
	}
}

func (c *client) testLoRA(t *testing.T) {
	if c.cfg.LoRAPath == "" {
		t.Skip("no LoRAPath configured")
	}
	name := fmt.Sprintf("parley-contract-lora-%d", time.Now().UnixNano()%1_000_000_000)
	load := map[string]any{"lora_name": name, "lora_path": c.cfg.LoRAPath}
	r := c.do(t, "POST", "/v1/load_lora_adapter", load)
	if r.status != http.StatusOK {
		t.Fatalf("load %q from %q = %d %s, want 200 (does the server allow runtime LoRA updating?)",
			name, c.cfg.LoRAPath, r.status, snippet(r.body))
	}
	loaded := true
	t.Cleanup(func() {
		if loaded {
			c.do(t, "POST", "/v1/unload_lora_adapter", map[string]any{"lora_name": name})
		}
	})
	if ids := c.modelIDs(t); !slices.Contains(ids, name) {
		t.Errorf("after load, /v1/models ids = %q, want them to include %q", ids, name)
	}
	res := c.complete(t, c.completionBody(name, c.prompt(t), 8, 1, 3))
	if len(res.Choices) != 1 {
		t.Errorf("completion with the adapter: choices = %d, want 1", len(res.Choices))
	} else {
		checkChoice(t, res.Choices[0], 8)
	}
	if r := c.do(t, "POST", "/v1/load_lora_adapter", load); r.status != http.StatusBadRequest {
		t.Errorf("loading %q again = %d %s, want 400", name, r.status, snippet(r.body))
	} else if _, err := errorMessage(r.body); err != nil {
		t.Errorf("loading %q again: %v", name, err)
	}
	r = c.do(t, "POST", "/v1/unload_lora_adapter", map[string]any{"lora_name": name})
	if r.status != http.StatusOK {
		t.Fatalf("unload %q = %d %s, want 200", name, r.status, snippet(r.body))
	}
	loaded = false
	if ids := c.modelIDs(t); slices.Contains(ids, name) {
		t.Errorf("after unload, /v1/models ids = %q, still include %q", ids, name)
	}
	if r := c.do(t, "POST", "/v1/unload_lora_adapter", map[string]any{"lora_name": name}); r.status < 400 || r.status > 499 {
		t.Errorf("unloading %q again = %d, want 4xx", name, r.status)
	}
}
