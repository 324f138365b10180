package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestPooledBodies: completion and tokenization bodies come from a pool
// and go back to it, yet every attempt sends its own call's bytes: a
// retried call sends the same body again, concurrent calls never see each
// other's, and a server that answers before reading the body (the
// transport may then still be writing it) changes nothing. Run with -race.
func TestPooledBodies(t *testing.T) {
	var mu sync.Mutex
	seen := map[int32][][]int32{} // first prompt token → every prompt received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case pathCompletions:
			var req completionRequestBody
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			first := len(seen[req.Prompt[0]]) == 0
			seen[req.Prompt[0]] = append(seen[req.Prompt[0]], req.Prompt)
			mu.Unlock()
			if first && req.Prompt[0]%2 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable) // even prompts: retried once
				return
			}
			w.Write(completionJSON(req.Prompt, 1, []int32{7, 8}))
		case pathTokenize:
			var req TokenizeRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, `{"count":1,"max_model_len":100,"tokens":[%d]}`, len(req.Messages[0].Content))
		}
	}))
	defer srv.Close()
	c := newTestClient(t, testOptions(srv.URL))

	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 200 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			prompt := make([]int32, 50+i*13)
			for k := range prompt {
				prompt[k] = int32(i*100000 + k)
			}
			prompt[0] = int32(i)
			if _, err := c.Complete(context.Background(), CompletionRequest{Prompt: prompt, Sampling: Sampling{MaxTokens: 2}}); err != nil {
				errs <- fmt.Errorf("complete %d: %w", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			content := string(make([]byte, i*37))
			res, err := c.Tokenize(context.Background(), TokenizeRequest{Messages: []Message{{Role: "user", Content: content}}})
			if err != nil || len(res.Tokens) != 1 || int(res.Tokens[0]) != len(content) {
				errs <- fmt.Errorf("tokenize %d: %v, %v", i, res.Tokens, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for first, prompts := range seen {
		want := 1 + int(1-first%2)
		if len(prompts) != want {
			t.Errorf("prompt %d arrived %d times, want %d", first, len(prompts), want)
		}
		for _, p := range prompts[1:] {
			if !slices.Equal(p, prompts[0]) {
				t.Errorf("prompt %d: a retry sent other tokens than the first attempt", first)
			}
		}
		if len(prompts[0]) != 50+int(first)*13 || prompts[0][1] != first*100000+1 {
			t.Errorf("prompt %d arrived as another call's (%d tokens)", first, len(prompts[0]))
		}
	}
}

// TestPooledBodyEarlyAnswer: a large body answered before the server reads
// it; its buffer goes back to the pool only when the transport closes it.
func TestPooledBodyEarlyAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest) // answer at once, body unread
		io.WriteString(w, `{"error":{"message":"no","type":"BadRequestError","code":400}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, testOptions(srv.URL))
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := make([]int32, 200_000)
			for k := range prompt {
				prompt[k] = int32(k)
			}
			if _, err := c.Complete(context.Background(), CompletionRequest{Prompt: prompt, Sampling: Sampling{MaxTokens: 2}}); err == nil {
				t.Error("Complete answered 400 = nil error")
			}
		}()
	}
	wg.Wait()
}

// lateWriter is a transport that answers at once and reads the request
// body later, in another goroutine, as net/http's may when a server
// answers early; then it reports the write through httptrace.
type lateWriter struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	wrong  int
	answer []byte
}

func (l *lateWriter) RoundTrip(req *http.Request) (*http.Response, error) {
	// the body as the call wrote it, to compare with what is read later
	first, _ := req.GetBody()
	want, _ := io.ReadAll(first)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		time.Sleep(20 * time.Millisecond)
		got, _ := io.ReadAll(req.Body)
		if !bytes.Equal(got, want) {
			l.mu.Lock()
			l.wrong++
			l.mu.Unlock()
		}
		if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteRequest != nil {
			tr.WroteRequest(httptrace.WroteRequestInfo{})
		}
	}()
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(l.answer)), ContentLength: int64(len(l.answer))}, nil
}

// TestPooledBodyKeptUntilWritten: a pooled body is not reused while the
// transport may still read it, even after the response came back.
func TestPooledBodyKeptUntilWritten(t *testing.T) {
	lw := &lateWriter{answer: []byte(`{"choices":[{"index":0,"text":"x","token_ids":[7],"logprobs":{"token_logprobs":[-0.5]},"finish_reason":"length"}]}`)}
	opts := testOptions("http://127.0.0.1:1")
	opts.HTTPClient = &http.Client{Transport: lw}
	c := newTestClient(t, opts)
	for i := range 200 {
		prompt := make([]int32, 100+i%7)
		for k := range prompt {
			prompt[k] = int32(i)
		}
		if _, err := c.Complete(context.Background(), CompletionRequest{Prompt: prompt, Sampling: Sampling{MaxTokens: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	lw.wg.Wait()
	if lw.wrong != 0 {
		t.Errorf("%d of 200 bodies changed after their call returned: a pooled buffer was reused too early", lw.wrong)
	}
}
