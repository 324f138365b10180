package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestCompleteRequestBody(t *testing.T) {
	seed := int64(-42)
	always := map[string]string{
		"logprobs":                   "1",
		"return_token_ids":           "true",
		"return_tokens_as_token_ids": "true",
		"skip_special_tokens":        "false",
	}
	tests := []struct {
		name string
		req  CompletionRequest
		want map[string]string // field -> raw JSON, besides `always`
	}{
		{
			name: "greedy sends temperature 0",
			req:  CompletionRequest{Model: "policy", Prompt: []int32{0, 7, 2147483647}, Sampling: Sampling{MaxTokens: 16, Temperature: 0}},
			want: map[string]string{"model": `"policy"`, "prompt": "[0,7,2147483647]", "max_tokens": "16", "temperature": "0"},
		},
		{
			name: "every sampling field",
			req: CompletionRequest{Model: "lora-step-3", Prompt: []int32{5}, Sampling: Sampling{
				MaxTokens: 512, Temperature: 0.7, TopP: 0.95, TopK: 50, MinP: 0.05, N: 8, Seed: &seed,
				Stop: []string{"</s>", "\"quoted\"\n", "é\x01"},
			}},
			want: map[string]string{
				"model": `"lora-step-3"`, "prompt": "[5]", "max_tokens": "512", "temperature": "0.7",
				"top_p": "0.95", "top_k": "50", "min_p": "0.05", "n": "8", "seed": "-42",
				"stop": `["</s>","\"quoted\"\n","é\u0001"]`,
			},
		},
		{
			name: "no model, top_k -1",
			req:  CompletionRequest{Prompt: []int32{1, 2}, Sampling: Sampling{MaxTokens: 1, Temperature: 1e-5, TopK: -1}},
			want: map[string]string{"prompt": "[1,2]", "max_tokens": "1", "temperature": "1e-05", "top_k": "-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeVLLM(t)
			c := newTestClient(t, testOptions(f.srv.URL))
			if _, err := c.Complete(context.Background(), tt.req); err != nil {
				t.Fatalf("Complete(%+v) = %v", tt.req, err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(f.lastBody(), &got); err != nil {
				t.Fatalf("request body %q is not JSON: %v", f.lastBody(), err)
			}
			want := map[string]string{}
			for k, v := range always {
				want[k] = v
			}
			for k, v := range tt.want {
				want[k] = v
			}
			if g, w := keys(got), keys(want); !reflect.DeepEqual(g, w) {
				t.Errorf("request fields = %v, want %v", g, w)
			}
			for k, w := range want {
				if !jsonEqual(t, got[k], []byte(w)) {
					t.Errorf("field %q = %s, want %s", k, got[k], w)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("json.Unmarshal(%q) = %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("json.Unmarshal(%q) = %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestCompleteDecodesFixture(t *testing.T) {
	fixture, err := os.ReadFile("testdata/completion_n2.json")
	if err != nil {
		t.Fatal(err)
	}
	f := serveFixed(t, http.StatusOK, fixture)
	c := newTestClient(t, testOptions(f.srv.URL))
	req := CompletionRequest{Prompt: []int32{151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198}, Sampling: Sampling{MaxTokens: 4, Temperature: 1, N: 2}}
	got, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete = %v", err)
	}
	want := []Completion{
		{TokenIDs: []int32{358, 22043, 582, 6718}, Logprobs: []float32{-0.0123, -1.25, -9999, -0.5}, Text: " I propose we split", FinishReason: "length"},
		{TokenIDs: []int32{9042, 13, 151645}, Logprobs: []float32{-2.5e-05, -0.75, -3}, Text: "Agreed.<|im_end|>", FinishReason: "stop"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete(fixture) = %+v, want %+v", got, want)
	}
}

// serveFixed answers every request with status and body.
func serveFixed(t *testing.T, status int, body []byte) *fakeVLLM {
	t.Helper()
	f := newFakeVLLM(t)
	f.before = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
		return true
	}
	return f
}

func TestCompleteResponseChecks(t *testing.T) {
	okChoice := `"index":0,"text":"x","finish_reason":"length","prompt_token_ids":[1,2,3]`
	tests := []struct {
		name    string
		body    string
		is      error
		wantMsg string
	}{
		{"token_ids missing (vLLM < 0.10.2)", `{"choices":[{` + okChoice + `,"logprobs":{"token_logprobs":[-1]}}]}`, ErrNoTokenIDs, "0.10.2"},
		{"token_ids null", `{"choices":[{` + okChoice + `,"token_ids":null,"logprobs":{"token_logprobs":[-1]}}]}`, ErrNoTokenIDs, "return_token_ids"},
		{"fewer logprobs than tokens", `{"choices":[{` + okChoice + `,"token_ids":[4,5],"logprobs":{"token_logprobs":[-1]}}]}`, ErrBadResponse, "1 logprobs for 2 token ids"},
		{"more logprobs than tokens", `{"choices":[{` + okChoice + `,"token_ids":[4],"logprobs":{"token_logprobs":[-1,-2]}}]}`, ErrBadResponse, "2 logprobs for 1 token ids"},
		{"logprobs missing", `{"choices":[{` + okChoice + `,"token_ids":[4],"logprobs":null}]}`, ErrBadResponse, "no logprobs"},
		{"null logprob", `{"choices":[{` + okChoice + `,"token_ids":[4],"logprobs":{"token_logprobs":[null]}}]}`, ErrBadResponse, "token_logprobs[0] is null"},
		{"negative token id", `{"choices":[{` + okChoice + `,"token_ids":[-4],"logprobs":{"token_logprobs":[-1]}}]}`, ErrBadResponse, "non-negative"},
		{"wrong choice count", `{"choices":[]}`, ErrBadResponse, "0 choices, want 1"},
		{"prompt echo differs", `{"choices":[{"index":0,"text":"x","prompt_token_ids":[1,2,4],"token_ids":[4],"logprobs":{"token_logprobs":[-1]}}]}`, ErrBadResponse, "differ from the prompt sent"},
		{"not JSON", `<html>`, ErrBadResponse, "decoding the completion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serveFixed(t, http.StatusOK, []byte(tt.body))
			c := newTestClient(t, testOptions(f.srv.URL))
			_, err := c.Complete(context.Background(), simpleRequest())
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Complete(%s) = %v, want %v containing %q", tt.body, err, tt.is, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), f.srv.URL) {
				t.Errorf("error %q does not name the endpoint %s", err, f.srv.URL)
			}
			if n := f.hits.Load(); n != 1 {
				t.Errorf("server saw %d requests, want 1 (a bad response is not retried)", n)
			}
		})
	}
}

func TestCompleteValidatesRequest(t *testing.T) {
	f := newFakeVLLM(t)
	c := newTestClient(t, testOptions(f.srv.URL))
	base := simpleRequest()
	tests := []struct {
		name string
		mod  func(r *CompletionRequest)
	}{
		{"empty prompt", func(r *CompletionRequest) { r.Prompt = nil }},
		{"zero max tokens", func(r *CompletionRequest) { r.MaxTokens = 0 }},
		{"negative temperature", func(r *CompletionRequest) { r.Temperature = -1 }},
		{"top_p above 1", func(r *CompletionRequest) { r.TopP = 1.5 }},
		{"negative token", func(r *CompletionRequest) { r.Prompt = []int32{1, -1} }},
	}
	for _, tt := range tests {
		req := base
		tt.mod(&req)
		if _, err := c.Complete(context.Background(), req); err == nil {
			t.Errorf("Complete(%s) = nil error, want one", tt.name)
		}
	}
	if n := f.hits.Load(); n != 0 {
		t.Errorf("server saw %d requests for invalid input, want 0", n)
	}
}

func TestCompleteN(t *testing.T) {
	f := newFakeVLLM(t)
	c := newTestClient(t, testOptions(f.srv.URL))
	req := simpleRequest()
	req.N = 4
	got, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete(n=4) = %v", err)
	}
	if len(got) != 4 {
		t.Fatalf("Complete(n=4) returned %d completions, want 4", len(got))
	}
	for i, g := range got {
		if !reflect.DeepEqual(g.TokenIDs, []int32{11, 12, 13}) || !reflect.DeepEqual(g.Logprobs, []float32{-0.5, -0.5, -0.5}) {
			t.Errorf("completion %d = %+v, want ids [11 12 13] with logprobs -0.5", i, g)
		}
	}
}

func TestPromptEchoCheck(t *testing.T) {
	req := CompletionRequest{Prompt: []int32{1, 22, 333}, Sampling: Sampling{MaxTokens: 1}}
	_, sent := appendCompletionBody(nil, &req)
	if string(sent.raw) != "[1,22,333]" {
		t.Fatalf("sent prompt = %q, want [1,22,333]", sent.raw)
	}
	body := func(echo string) []byte {
		return []byte(`{"choices":[{"index":0,"text":"","token_ids":[7],"logprobs":{"token_logprobs":[-1]},"prompt_token_ids":` + echo + `}]}`)
	}
	tests := []struct {
		echo    string
		wantErr string
	}{
		{"[1,22,333]", ""},
		{"[ 1, 22,\n333 ]", ""},
		{"null", ""},
		{"[1,22,334]", "differ from the prompt sent"},
		{"[1,22,333,4]", "(4 tokens) differ from the prompt sent (3 tokens)"},
		{"[1,22]", "differ from the prompt sent"},
		{"[1,22,333]]", "decoding the completion"},
	}
	for _, tt := range tests {
		_, err := decodeCompletion(body(tt.echo), 1, sent)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("decodeCompletion(echo %s) = %v, want error containing %q", tt.echo, err, tt.wantErr)
		}
	}
}
