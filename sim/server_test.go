package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCompletionDeterminism(t *testing.T) {
	_, ts := startServer(t, Options{})
	var prompts [][]int32
	for turns := 0; turns < 4; turns++ {
		prompts = append(prompts, tokenizeHTTP(t, ts.URL, gameMessages(turns), nil))
	}
	type key struct{ p, seed int }
	serial := map[key][]completionChoice{}
	for pi, p := range prompts {
		for seed := 0; seed < 3; seed++ {
			r, err := post(http.DefaultClient, ts.URL+PathCompletions, completionReq(p, 100, 2, int64(seed)))
			if err != nil || r.status != 200 {
				t.Fatalf("completion: %v %d %s", err, r.status, r.body)
			}
			serial[key{pi, seed}] = choicesOf(t, r.body)
		}
	}
	// The same requests again, concurrently and in another order.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for round := 0; round < 4; round++ {
		for k := range serial {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := post(http.DefaultClient, ts.URL+PathCompletions, completionReq(prompts[k.p], 100, 2, int64(k.seed)))
				mu.Lock()
				defer mu.Unlock()
				if err != nil || r.status != 200 {
					t.Errorf("concurrent completion: %v %d %s", err, r.status, r.body)
					return
				}
				if got := choicesOf(t, r.body); !reflect.DeepEqual(got, serial[k]) {
					t.Errorf("prompt %d seed %d: concurrent choices differ from the serial ones", k.p, k.seed)
				}
			}()
		}
	}
	wg.Wait()
	// Different seeds give different replies (in at least some cases).
	if reflect.DeepEqual(serial[key{0, 0}], serial[key{0, 1}]) && reflect.DeepEqual(serial[key{1, 0}], serial[key{1, 1}]) {
		t.Errorf("seeds 0 and 1 give identical choices; want the seed to matter")
	}
}

// TestFaultsDoNotChangeOutputs runs the same requests against a clean
// server and one injecting errors, 429s and drops, retrying until success:
// the outputs must be identical.
func TestFaultsDoNotChangeOutputs(t *testing.T) {
	_, clean := startServer(t, Options{})
	faulty, bad := startServer(t, Options{ErrorRate: 0.2, RateLimitRate: 0.2, DropRate: 0.1, FaultSeed: 3,
		LatencyMedian: time.Millisecond, LatencySigma: 1, RetryAfter: time.Millisecond})
	prompt := tokenizeHTTP(t, clean.URL, gameMessages(2), nil)
	for seed := int64(0); seed < 20; seed++ {
		req := completionReq(prompt, 100, 1, seed)
		want, err := post(http.DefaultClient, clean.URL+PathCompletions, req)
		if err != nil || want.status != 200 {
			t.Fatalf("clean completion: %v %d", err, want.status)
		}
		var got httpResult
		for attempt := 0; ; attempt++ {
			if attempt == 100 {
				t.Fatalf("seed %d: no success in 100 attempts", seed)
			}
			got, err = post(http.DefaultClient, bad.URL+PathCompletions, req)
			if err == nil && got.status == 200 {
				break
			}
		}
		if !reflect.DeepEqual(choicesOf(t, got.body), choicesOf(t, want.body)) {
			t.Errorf("seed %d: choices with faults differ from a clean run", seed)
		}
	}
	if st := faulty.Stats(); len(st.Faults) == 0 {
		t.Errorf("Stats().Faults = %v, want some faults injected", st.Faults)
	}
}

// TestGameSequenceProperty checks the property the game relies on, through
// the API: the prompt tokens, then the sampled token ids (ending in
// <|im_end|>), then the tokens of "\n<|im_start|>user\n..." equal the
// tokenization of the re-rendered conversation.
func TestGameSequenceProperty(t *testing.T) {
	srv, ts := startServer(t, Options{})
	tok := srv.Tokenizer()
	for _, kwargs := range []map[string]any{nil, {"enable_thinking": false}} {
		msgs := gameMessages(0)
		seq := tokenizeHTTP(t, ts.URL, msgs, kwargs)
		for turn := 0; turn < 4; turn++ {
			var res completionResponse
			mustPost(t, ts.URL+PathCompletions, completionReq(seq, 200, 1, int64(turn)), &res)
			ch := res.Choices[0]
			if ch.FinishReason != "stop" || ch.TokenIDs[len(ch.TokenIDs)-1] != TokenIMEnd {
				t.Fatalf("turn %d: finish %q, last token %d; want stop and <|im_end|>", turn, ch.FinishReason, ch.TokenIDs[len(ch.TokenIDs)-1])
			}
			if !slices.Equal(ch.PromptTokenIDs, seq) {
				t.Fatalf("turn %d: prompt_token_ids differ from the prompt", turn)
			}
			user := fmt.Sprintf("Agent A: turn %d reply.", turn)
			msgs = append(msgs, Message{Role: "assistant", Content: ch.Text}, Message{Role: "user", Content: user})
			tail := RenderChat([]Message{{Role: "user", Content: user}}, TemplateOptions{AddGenerationPrompt: true, DisableThinking: kwargs != nil})
			seq = append(append(seq, ch.TokenIDs...), tok.Encode("\n"+tail)...)
			if got := tokenizeHTTP(t, ts.URL, msgs, kwargs); !slices.Equal(got, seq) {
				t.Fatalf("kwargs %v turn %d: re-rendered tokens differ at %d (len %d vs %d)", kwargs, turn, firstDiff(got, seq), len(got), len(seq))
			}
		}
	}
}

func TestCompletionParams(t *testing.T) {
	_, ts := startServer(t, Options{})
	prompt := tokenizeHTTP(t, ts.URL, gameMessages(1), nil)
	complete := func(t *testing.T, req map[string]any) completionResponse {
		t.Helper()
		var res completionResponse
		mustPost(t, ts.URL+PathCompletions, req, &res)
		return res
	}
	t.Run("n uses seed+i", func(t *testing.T) {
		two := complete(t, completionReq(prompt, 100, 2, 5))
		next := complete(t, completionReq(prompt, 100, 1, 6))
		if len(two.Choices) != 2 || two.Choices[0].Index != 0 || two.Choices[1].Index != 1 {
			t.Fatalf("n=2 choices = %+v, want indexes 0 and 1", two.Choices)
		}
		if !slices.Equal(two.Choices[1].TokenIDs, next.Choices[0].TokenIDs) {
			t.Errorf("choice 1 of seed 5 != choice 0 of seed 6")
		}
	})
	t.Run("greedy ignores the seed", func(t *testing.T) {
		a := completionReq(prompt, 100, 3, 1)
		a["temperature"] = 0.0
		b := completionReq(prompt, 100, 1, 2)
		b["temperature"] = 0.0
		ra, rb := complete(t, a), complete(t, b)
		for _, ch := range ra.Choices {
			if !slices.Equal(ch.TokenIDs, rb.Choices[0].TokenIDs) {
				t.Errorf("temperature 0: choice %d differs from another seed's greedy reply", ch.Index)
			}
		}
	})
	t.Run("max_tokens", func(t *testing.T) {
		for _, max := range []int{1, 5, 19} {
			res := complete(t, completionReq(prompt, max, 1, 1))
			ch := res.Choices[0]
			if len(ch.TokenIDs) != max || ch.FinishReason != "length" || len(ch.Logprobs.TokenLogprobs) != max {
				t.Errorf("max_tokens %d: %d tokens, %d logprobs, finish %q; want %d, %d, length",
					max, len(ch.TokenIDs), len(ch.Logprobs.TokenLogprobs), ch.FinishReason, max, max)
			}
			if res.Usage.CompletionTokens != max || res.Usage.PromptTokens != len(prompt) {
				t.Errorf("max_tokens %d: usage %+v", max, res.Usage)
			}
		}
	})
	t.Run("default max_tokens is 16", func(t *testing.T) {
		req := completionReq(prompt, 0, 1, 1)
		delete(req, "max_tokens")
		if ch := complete(t, req).Choices[0]; len(ch.TokenIDs) != 16 {
			t.Errorf("no max_tokens: %d tokens, want vLLM's default 16", len(ch.TokenIDs))
		}
	})
	t.Run("stop string", func(t *testing.T) {
		full := complete(t, completionReq(prompt, 200, 1, 9)).Choices[0]
		words := strings.Fields(full.Text)
		stop := words[3]
		req := completionReq(prompt, 200, 1, 9)
		req["stop"] = []string{stop}
		ch := complete(t, req).Choices[0]
		if ch.FinishReason != "stop" || ch.StopReason != stop || strings.Contains(ch.Text, stop) ||
			!strings.HasPrefix(full.Text, ch.Text) || len(ch.TokenIDs) >= len(full.TokenIDs) {
			t.Errorf("stop %q: text %q, finish %q, stop_reason %v; want the text cut before it", stop, ch.Text, ch.FinishReason, ch.StopReason)
		}
	})
	t.Run("logprobs", func(t *testing.T) {
		req := completionReq(prompt, 200, 1, 3)
		req["logprobs"] = 3
		ch := complete(t, req).Choices[0]
		lp := ch.Logprobs
		if len(lp.Tokens) != len(ch.TokenIDs) || len(lp.TopLogprobs) != len(ch.TokenIDs) || len(lp.TextOffset) != len(ch.TokenIDs) {
			t.Fatalf("logprob lists have lengths %d/%d/%d, want %d", len(lp.Tokens), len(lp.TopLogprobs), len(lp.TextOffset), len(ch.TokenIDs))
		}
		for i, id := range ch.TokenIDs {
			if want := fmt.Sprintf("token_id:%d", id); lp.Tokens[i] != want {
				t.Fatalf("tokens[%d] = %q, want %q", i, lp.Tokens[i], want)
			}
			if v := lp.TokenLogprobs[i]; v >= 0 || lp.TopLogprobs[i][lp.Tokens[i]] != v || len(lp.TopLogprobs[i]) > 3 {
				t.Fatalf("position %d: logprob %v, top %v", i, v, lp.TopLogprobs[i])
			}
		}
		req["return_tokens_as_token_ids"] = false
		ch2 := complete(t, req).Choices[0]
		if got := strings.Join(ch2.Logprobs.Tokens, ""); !strings.HasPrefix(got, ch2.Text) {
			t.Errorf("token strings %q do not spell the text %q", got, ch2.Text)
		}
	})
	t.Run("no logprobs and no token ids unless asked", func(t *testing.T) {
		res := complete(t, map[string]any{"model": DefaultModel, "prompt": prompt, "max_tokens": 8})
		if ch := res.Choices[0]; ch.Logprobs != nil || ch.TokenIDs != nil || ch.PromptTokenIDs != nil {
			t.Errorf("plain request: logprobs %v, token_ids %v; want both null", ch.Logprobs, ch.TokenIDs)
		}
	})
	t.Run("string and batch prompts", func(t *testing.T) {
		res := complete(t, map[string]any{"prompt": []string{"Hello there.", "Another prompt."}, "n": 2, "max_tokens": 4})
		if len(res.Choices) != 4 || res.Choices[3].Index != 3 {
			t.Errorf("batch of 2 with n=2: %d choices, want 4 indexed 0..3", len(res.Choices))
		}
	})
	t.Run("skip_special_tokens", func(t *testing.T) {
		req := completionReq(prompt, 200, 1, 3)
		req["skip_special_tokens"] = true
		if ch := complete(t, req).Choices[0]; strings.Contains(ch.Text, "<|im_end|>") {
			t.Errorf("text %q contains <|im_end|>", ch.Text)
		}
	})
}

func TestCompletionErrors(t *testing.T) {
	_, ts := startServer(t, Options{MaxModelLen: 64})
	_, legacy := startServer(t, Options{LegacyErrors: true})
	short := []int32{1, 2, 3}
	tests := []struct {
		name   string
		base   string
		body   any
		status int
		msg    string
	}{
		{"unknown model", ts.URL, map[string]any{"model": "nope", "prompt": short}, 404, "The model `nope` does not exist."},
		{"unknown model, legacy shape", legacy.URL, map[string]any{"model": "nope", "prompt": short}, 404, "The model `nope` does not exist."},
		{"context too long", ts.URL, map[string]any{"prompt": short, "max_tokens": 62}, 400, "maximum context length is 64"},
		{"max_tokens 0", ts.URL, map[string]any{"prompt": short, "max_tokens": 0}, 400, "max_tokens must be at least 1"},
		{"bad token id", ts.URL, map[string]any{"prompt": []int32{VocabSize}, "max_tokens": 1}, 400, "out of vocabulary"},
		{"empty prompt", ts.URL, map[string]any{"prompt": []int32{}}, 400, "prompt"},
		{"no prompt", ts.URL, map[string]any{"max_tokens": 1}, 400, "prompt"},
		{"too many logprobs", ts.URL, map[string]any{"prompt": short, "logprobs": 21}, 400, "max allowed: 20"},
		{"invalid JSON", ts.URL, "{", 400, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := post(http.DefaultClient, tt.base+PathCompletions, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if r.status != tt.status {
				t.Fatalf("status = %d (%s), want %d", r.status, r.body, tt.status)
			}
			var nested struct {
				Error *errorInfo `json:"error"`
			}
			var flat legacyError
			msg := ""
			if json.Unmarshal(r.body, &nested) == nil && nested.Error != nil {
				msg = nested.Error.Message
				if nested.Error.Code != tt.status {
					t.Errorf("error.code = %d, want %d", nested.Error.Code, tt.status)
				}
			} else if json.Unmarshal(r.body, &flat) == nil && flat.Object == "error" {
				msg = flat.Message
			}
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("error message = %q (body %s), want it to contain %q", msg, r.body, tt.msg)
			}
		})
	}
}

func TestLoRAAdapters(t *testing.T) {
	_, ts := startServer(t, Options{})
	dir := t.TempDir()
	_, strict := startServer(t, Options{RequireLoRAPath: true})
	tests := []struct {
		name   string
		base   string
		path   string
		body   map[string]any
		status int
		text   string
	}{
		{"load", ts.URL, PathLoadLoRA, map[string]any{"lora_name": "step-1", "lora_path": "/ckpt/1"}, 200, "Success: LoRA adapter 'step-1' added successfully."},
		{"load again", ts.URL, PathLoadLoRA, map[string]any{"lora_name": "step-1", "lora_path": "/ckpt/1"}, 400, "has already been loaded"},
		{"load in place", ts.URL, PathLoadLoRA, map[string]any{"lora_name": "step-1", "lora_path": "/ckpt/1b", "load_inplace": true}, 200, "added successfully"},
		{"missing path", ts.URL, PathLoadLoRA, map[string]any{"lora_name": "x"}, 400, "must be provided"},
		{"path must exist", strict.URL, PathLoadLoRA, map[string]any{"lora_name": "x", "lora_path": dir + "/missing"}, 404, "No adapter found"},
		{"existing path", strict.URL, PathLoadLoRA, map[string]any{"lora_name": "x", "lora_path": dir}, 200, "added successfully"},
		{"unload unknown", ts.URL, PathUnloadLoRA, map[string]any{"lora_name": "nope"}, 404, "cannot be found"},
	}
	for _, tt := range tests {
		r, err := post(http.DefaultClient, tt.base+tt.path, tt.body)
		if err != nil {
			t.Fatal(err)
		}
		if r.status != tt.status || !strings.Contains(string(r.body), tt.text) {
			t.Errorf("%s: %d %s, want %d containing %q", tt.name, r.status, r.body, tt.status, tt.text)
		}
		if tt.status == 200 && !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("%s: Content-Type %q, want text/plain", tt.name, r.header.Get("Content-Type"))
		}
	}
	var models struct {
		Data []modelCard `json:"data"`
	}
	resp, err := http.Get(ts.URL + PathModels)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 2 || models.Data[1].ID != "step-1" || models.Data[1].Parent == nil ||
		*models.Data[1].Parent != DefaultModel || models.Data[1].Root != "/ckpt/1b" {
		t.Errorf("/v1/models = %+v, want the base and step-1 (root /ckpt/1b, parent %s)", models.Data, DefaultModel)
	}
	// The adapter serves completions, differently from the base model.
	prompt := tokenizeHTTP(t, ts.URL, gameMessages(1), nil)
	var base, adapted completionResponse
	mustPost(t, ts.URL+PathCompletions, completionReq(prompt, 100, 1, 1), &base)
	req := completionReq(prompt, 100, 1, 1)
	req["model"] = "step-1"
	mustPost(t, ts.URL+PathCompletions, req, &adapted)
	if adapted.Model != "step-1" || slices.Equal(base.Choices[0].TokenIDs, adapted.Choices[0].TokenIDs) {
		t.Errorf("adapter completion: model %q, same tokens as base %v; want model step-1 and a different reply",
			adapted.Model, slices.Equal(base.Choices[0].TokenIDs, adapted.Choices[0].TokenIDs))
	}
	r, _ := post(http.DefaultClient, ts.URL+PathUnloadLoRA, map[string]any{"lora_name": "step-1"})
	if r.status != 200 || string(r.body) != "Success: LoRA adapter 'step-1' removed successfully." {
		t.Errorf("unload: %d %s", r.status, r.body)
	}
	if r, _ := post(http.DefaultClient, ts.URL+PathCompletions, req); r.status != 404 {
		t.Errorf("completion with an unloaded adapter = %d, want 404", r.status)
	}
}

func TestTokenizeEndpoint(t *testing.T) {
	srv, ts := startServer(t, Options{})
	tok := srv.Tokenizer()
	var res tokenizeResponse
	mustPost(t, ts.URL+PathTokenize, map[string]any{"prompt": "Hello world", "return_token_strs": true}, &res)
	if !slices.Equal(res.Tokens, tok.Encode("Hello world")) || res.Count != len(res.Tokens) ||
		res.MaxModelLen != DefaultMaxModelLen || strings.Join(res.TokenStrs, "") != "Hello world" {
		t.Errorf("tokenize prompt form = %+v", res)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	mustPost(t, ts.URL+PathTokenize, map[string]any{"messages": msgs}, &res)
	if want := tok.ApplyChatTemplate(msgs, TemplateOptions{AddGenerationPrompt: true}); !slices.Equal(res.Tokens, want) {
		t.Errorf("add_generation_prompt defaults to true as in vLLM: got %v, want %v", res.Tokens, want)
	}
	// Content parts are accepted.
	mustPost(t, ts.URL+PathTokenize, map[string]any{"messages": []map[string]any{{"role": "user",
		"content": []map[string]string{{"type": "text", "text": "h"}, {"type": "text", "text": "i"}}}}}, &res)
	if want := tok.ApplyChatTemplate(msgs, TemplateOptions{AddGenerationPrompt: true}); !slices.Equal(res.Tokens, want) {
		t.Errorf("content parts: got %v, want %v", res.Tokens, want)
	}
	var detok struct{ Prompt string }
	mustPost(t, ts.URL+PathDetokenize, map[string]any{"tokens": tok.Encode("naïve <|im_end|>")}, &detok)
	if detok.Prompt != "naïve <|im_end|>" {
		t.Errorf("detokenize = %q, want %q", detok.Prompt, "naïve <|im_end|>")
	}
	for _, body := range []map[string]any{
		{"messages": msgs, "add_generation_prompt": true, "continue_final_message": true},
		{"model": DefaultModel},
	} {
		if r, _ := post(http.DefaultClient, ts.URL+PathTokenize, body); r.status != 400 {
			t.Errorf("tokenize %v = %d, want 400", body, r.status)
		}
	}
	if r, _ := post(http.DefaultClient, ts.URL+PathTokenize, map[string]any{"model": "nope", "prompt": "x"}); r.status != 404 {
		t.Errorf("tokenize with an unknown model = %d, want 404", r.status)
	}
}

func TestAPIKey(t *testing.T) {
	_, ts := startServer(t, Options{APIKey: "s3cret"})
	get := func(path, key string) int {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		path, key string
		want      int
	}{
		{PathModels, "", 401},
		{PathModels, "wrong", 401},
		{PathModels, "s3cret", 200},
		{PathHealth, "", 200},
		{PathMetrics, "", 200},
	}
	for _, tt := range tests {
		if got := get(tt.path, tt.key); got != tt.want {
			t.Errorf("GET %s with key %q = %d, want %d", tt.path, tt.key, got, tt.want)
		}
	}
}

func TestMaxConcurrentAndMetrics(t *testing.T) {
	srv, ts := startServer(t, Options{MaxConcurrent: 1, LatencyMedian: time.Hour, Model: "m"})
	prompt := srv.Tokenizer().ApplyChatTemplate(gameMessages(0), TemplateOptions{AddGenerationPrompt: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"model": "m", "prompt": prompt, "max_tokens": 4})
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+PathCompletions, strings.NewReader(string(body)))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "one running and one waiting", func() bool {
		st := srv.Stats()
		return st.Running == 1 && st.Waiting == 1
	})
	resp, err := http.Get(ts.URL + PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"# TYPE vllm:num_requests_running gauge\n" + `vllm:num_requests_running{engine="0",model_name="m"} 1.0`,
		"# TYPE vllm:num_requests_waiting gauge\n" + `vllm:num_requests_waiting{engine="0",model_name="m"} 1.0`,
		`sim_requests_total{path="/v1/completions"} 2.0`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	cancel()
	wg.Wait()
	waitFor(t, "nothing running or waiting", func() bool {
		st := srv.Stats()
		return st.Running == 0 && st.Waiting == 0
	})
}

// waitFor polls cond until it holds; it fails the test after a generous
// deadline (a hang, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestStatsCountRequests(t *testing.T) {
	srv, ts := startServer(t, Options{})
	for _, p := range []string{PathHealth, PathHealth, PathModels, "/nope"} {
		resp, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	st := srv.Stats()
	want := map[string]int64{PathHealth: 2, PathModels: 1, "other": 1}
	if !reflect.DeepEqual(st.Requests, want) {
		t.Errorf("Stats().Requests = %v, want %v", st.Requests, want)
	}
}

func TestChatAgentMode(t *testing.T) {
	_, ts := startServer(t, Options{})
	body := map[string]any{"model": DefaultModel, "messages": gameMessages(1), "seed": 4}
	var a, b chatResponse
	mustPost(t, ts.URL+PathChat, body, &a)
	mustPost(t, ts.URL+PathChat, body, &b)
	if a.Choices[0].Message.Content == "" || a.Choices[0].Message.Content != b.Choices[0].Message.Content {
		t.Errorf("policy chat replies %q and %q, want equal non-empty replies", a.Choices[0].Message.Content, b.Choices[0].Message.Content)
	}
	if strings.HasPrefix(a.Choices[0].Message.Content, "Score:") {
		t.Errorf("policy chat reply is a judge reply: %q", a.Choices[0].Message.Content)
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"rate above one", Options{ErrorRate: 1.5}, "ErrorRate"},
		{"rates sum above one", Options{ErrorRate: 0.6, DropRate: 0.6}, "must not exceed 1"},
		{"negative sigma", Options{LatencySigma: -1}, "LatencySigma"},
		{"negative concurrency", Options{MaxConcurrent: -1}, "MaxConcurrent"},
		{"judge rates", Options{JudgeRefusalRate: 0.7, JudgeMalformedRate: 0.7}, "must not exceed 1"},
		{"agree prob", Options{AgreeProb: 2}, "AgreeProb"},
		{"template", Options{Template: "llama3"}, "Template"},
		{"engine dies", Options{EngineDiesAfter: -1}, "EngineDiesAfter"},
	}
	for _, tt := range tests {
		_, err := New(tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "sim.New: ") {
			t.Errorf("%s: New = %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
	s, err := New(Options{AgreeProb: -1})
	if err != nil {
		t.Fatal(err)
	}
	o := s.Options()
	if o.AgreeProb != 0 || o.AdapterAgreeProb != 0.3 || o.Model != DefaultModel || o.JudgeModel != DefaultJudgeModel ||
		o.RetryAfter != DefaultRetryAfter || o.HangMax != DefaultHangMax || o.TailMult != DefaultTailMult {
		t.Errorf("defaults = %+v", o)
	}
}

// TestCompletionResponseShape checks the hand-written encoder against the
// field set of vLLM's CompletionResponse.
func TestCompletionResponseShape(t *testing.T) {
	_, ts := startServer(t, Options{})
	prompt := tokenizeHTTP(t, ts.URL, gameMessages(0), nil)
	req := completionReq(prompt, 200, 1, 1)
	req["logprobs"] = 0
	req["stop"] = "."
	r, err := post(http.DefaultClient, ts.URL+PathCompletions, req)
	if err != nil || r.status != 200 {
		t.Fatalf("completion: %v %d %s", err, r.status, r.body)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &top); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, r.body)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	if got, want := keys(top), []string{"choices", "created", "id", "kv_transfer_params", "model", "object", "service_tier", "system_fingerprint", "usage"}; !slices.Equal(got, want) {
		t.Errorf("response keys = %q, want %q", got, want)
	}
	var choices []map[string]json.RawMessage
	json.Unmarshal(top["choices"], &choices)
	if got, want := keys(choices[0]), []string{"finish_reason", "index", "logprobs", "prompt_logprobs", "prompt_token_ids", "stop_reason", "text", "token_ids"}; !slices.Equal(got, want) {
		t.Errorf("choice keys = %q, want %q", got, want)
	}
	var usage map[string]json.RawMessage
	json.Unmarshal(top["usage"], &usage)
	if got, want := keys(usage), []string{"completion_tokens", "prompt_tokens", "prompt_tokens_details", "total_tokens"}; !slices.Equal(got, want) {
		t.Errorf("usage keys = %q, want %q", got, want)
	}
	ch := choicesOf(t, r.body)[0]
	if ch.StopReason != "." || ch.FinishReason != "stop" {
		t.Errorf("stop \".\": finish %q stop_reason %v", ch.FinishReason, ch.StopReason)
	}
	for i, m := range ch.Logprobs.TopLogprobs {
		if len(m) != 1 {
			t.Errorf("logprobs 0: top_logprobs[%d] = %v, want only the sampled token", i, m)
		}
	}
}

// TestManyConcurrentRequests holds a thousand completions in flight at
// once (each sleeping on an hour of simulated latency until Close releases
// them all) and checks they all succeed with the replies they get alone.
func TestManyConcurrentRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	srv, ts := startServer(t, Options{})
	slow, slowTS := startServer(t, Options{LatencyMedian: time.Hour})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	t.Cleanup(client.CloseIdleConnections)
	prompt := srv.Tokenizer().ApplyChatTemplate(gameMessages(1), TemplateOptions{AddGenerationPrompt: true})
	const n = 1000
	want := make([][]int32, 8)
	for i := range want {
		var res completionResponse
		mustPost(t, ts.URL+PathCompletions, completionReq(prompt, 100, 1, int64(i)), &res)
		want[i] = res.Choices[0].TokenIDs
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := post(client, slowTS.URL+PathCompletions, completionReq(prompt, 100, 1, int64(i%8)))
			switch {
			case err != nil:
				errs <- err.Error()
			case r.status != 200:
				errs <- fmt.Sprintf("status %d", r.status)
			case !slices.Equal(choicesOf(t, r.body)[0].TokenIDs, want[i%8]):
				errs <- fmt.Sprintf("request %d: reply differs", i)
			}
		}()
	}
	waitFor(t, "all requests in flight", func() bool { return slow.Stats().Running == n })
	slow.Close()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent request: %s", e)
	}
}

func TestServe(t *testing.T) {
	srv, err := New(Options{HangRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + PathHealth)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /health: %v %v", err, resp)
	}
	resp.Body.Close()
	hung := make(chan httpResult, 1)
	go func() {
		r, _ := post(http.DefaultClient, base+PathTokenize, map[string]any{"prompt": "x"})
		hung <- r
	}()
	waitFor(t, "the hang", func() bool { return srv.Stats().Faults[FaultHang] == 1 })
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after cancel = %v, want nil", err)
	}
	if r := <-hung; r.status != http.StatusServiceUnavailable {
		t.Errorf("hung request at shutdown = %d, want 503", r.status)
	}
}
