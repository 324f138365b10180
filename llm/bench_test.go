//go:build unix

package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Benchmarks report ns/op, allocs/op and cpu-µs/req: user+system CPU time of
// this process per request (getrusage). With the in-process httptest server
// that figure includes the server's share; the "client-only" variants run
// the server in a child process, so the figure is parley's own cost.

const (
	benchPromptLen = 2048
	benchGenLen    = 256
	benchServerEnv = "LLM_BENCH_SERVER"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		runBenchServer()
		return
	}
	os.Exit(m.Run())
}

func benchPrompt() []int32 {
	p := make([]int32, benchPromptLen)
	for i := range p {
		p[i] = int32(1000 + (i*7919)%150000)
	}
	return p
}

func benchGen() []int32 {
	g := make([]int32, benchGenLen)
	for i := range g {
		g[i] = int32(200 + (i*104729)%150000)
	}
	return g
}

// benchHandler answers completions and tokenizations with canned bodies.
func benchHandler() http.Handler {
	completion := completionJSON(benchPrompt(), 1, benchGen())
	tokenized, _ := json.Marshal(map[string]any{"count": benchPromptLen, "max_model_len": 32768, "tokens": benchPrompt()})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case pathCompletions:
			w.Write(completion)
		case pathTokenize:
			w.Write(tokenized)
		default:
			http.NotFound(w, r)
		}
	})
}

// runBenchServer serves benchHandler in a child process until stdin closes.
func runBenchServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	go http.Serve(ln, benchHandler())
	io.Copy(io.Discard, os.Stdin)
}

// childServer starts the bench server in a child process.
func childServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("reading the child server's address: %v", err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// cpuTimes returns this process's user and system CPU time so far.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// cpuPerOp starts CPU accounting; call the result after the timed loop to
// report user+system CPU time per operation as unit, and the user part
// alone as "user-"+unit (system time is mostly the kernel's socket work,
// which is slow under nested virtualisation).
func cpuPerOp(b *testing.B, unit string) func() {
	u0, s0 := cpuTimes()
	return func() {
		u1, s1 := cpuTimes()
		per := func(d time.Duration) float64 { return float64(d) / float64(b.N) / float64(time.Microsecond) }
		b.ReportMetric(per(u1-u0+s1-s0), unit)
		b.ReportMetric(per(u1-u0), "user-"+unit)
	}
}

// runBench calls op b.N times (in parallel when par > 0) and reports CPU
// time per request.
func runBench(b *testing.B, par int, op func() error) {
	b.ReportAllocs()
	b.ResetTimer()
	report := cpuPerOp(b, "cpu-µs/req")
	if par > 0 {
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for i := 0; i < b.N; i++ {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	report()
}

func benchClient(b *testing.B, url string) *Client {
	c, err := New(Options{Endpoints: []string{url}, MaxConcurrentPerEndpoint: 1024})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

func BenchmarkComplete(b *testing.B) {
	req := CompletionRequest{Model: "policy", Prompt: benchPrompt(), Sampling: Sampling{MaxTokens: benchGenLen, Temperature: 1, TopP: 1}}
	complete := func(c *Client) func() error {
		return func() error {
			out, err := c.Complete(context.Background(), req)
			if err == nil && len(out[0].TokenIDs) != benchGenLen {
				err = fmt.Errorf("got %d tokens", len(out[0].TokenIDs))
			}
			return err
		}
	}
	b.Run("in-process", func(b *testing.B) {
		srv := httptest.NewServer(benchHandler())
		defer srv.Close()
		runBench(b, 0, complete(benchClient(b, srv.URL)))
	})
	b.Run("client-only", func(b *testing.B) {
		runBench(b, 0, complete(benchClient(b, childServer(b))))
	})
	b.Run("client-only-parallel", func(b *testing.B) {
		runBench(b, 16, complete(benchClient(b, childServer(b))))
	})
}

func BenchmarkTokenize(b *testing.B) {
	req := TokenizeRequest{Model: "policy", Messages: []Message{
		{Role: "system", Content: strings.Repeat("You are a careful negotiator. ", 20)},
		{Role: "user", Content: strings.Repeat("Here is my proposal, with reasons. ", 40)},
	}, AddGenerationPrompt: true}
	tokenize := func(c *Client) func() error {
		return func() error {
			out, err := c.Tokenize(context.Background(), req)
			if err == nil && out.Count != benchPromptLen {
				err = fmt.Errorf("got %d tokens", out.Count)
			}
			return err
		}
	}
	b.Run("in-process", func(b *testing.B) {
		srv := httptest.NewServer(benchHandler())
		defer srv.Close()
		runBench(b, 0, tokenize(benchClient(b, srv.URL)))
	})
	b.Run("client-only", func(b *testing.B) {
		runBench(b, 0, tokenize(benchClient(b, childServer(b))))
	})
}

// BenchmarkEncodeCompletion compares the hand-written request encoder with
// encoding/json on the same 2048-token request.
func BenchmarkEncodeCompletion(b *testing.B) {
	req := CompletionRequest{Model: "policy", Prompt: benchPrompt(), Sampling: Sampling{MaxTokens: benchGenLen, Temperature: 1, TopP: 1}}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b, "cpu-µs/op")()
		for i := 0; i < b.N; i++ {
			body, _ := appendCompletionBody(make([]byte, 0, completionBodySize(&req)), &req)
			_ = body
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		type wire struct {
			Model  string  `json:"model,omitempty"`
			Prompt []int32 `json:"prompt"`
			Sampling
			Logprobs               int  `json:"logprobs"`
			ReturnTokenIDs         bool `json:"return_token_ids"`
			ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids"`
			SkipSpecialTokens      bool `json:"skip_special_tokens"`
		}
		b.ReportAllocs()
		defer cpuPerOp(b, "cpu-µs/op")()
		for i := 0; i < b.N; i++ {
			body, err := json.Marshal(wire{req.Model, req.Prompt, req.Sampling, 1, true, true, false})
			if err != nil {
				b.Fatal(err)
			}
			_ = body
		}
	})
}

// BenchmarkDecodeCompletion compares decoding a 256-token completion (with
// a 2048-token prompt echo) through the custom list types and through
// plain reflection into []int32 / []float32.
func BenchmarkDecodeCompletion(b *testing.B) {
	body := completionJSON(benchPrompt(), 1, benchGen())
	req := CompletionRequest{Prompt: benchPrompt(), Sampling: Sampling{MaxTokens: benchGenLen}}
	_, sent := appendCompletionBody(nil, &req)
	b.Run("jsonfast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		defer cpuPerOp(b, "cpu-µs/op")()
		for i := 0; i < b.N; i++ {
			if _, err := decodeCompletion(body, 1, sent); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflection", func(b *testing.B) {
		type plain struct {
			Choices []struct {
				Index          int     `json:"index"`
				Text           string  `json:"text"`
				FinishReason   string  `json:"finish_reason"`
				TokenIDs       []int32 `json:"token_ids"`
				PromptTokenIDs []int32 `json:"prompt_token_ids"`
				Logprobs       *struct {
					TokenLogprobs []float32 `json:"token_logprobs"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		defer cpuPerOp(b, "cpu-µs/op")()
		for i := 0; i < b.N; i++ {
			var r plain
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
