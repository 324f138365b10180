package sim

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/sim/scripted"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start: on a shared,
// loaded machine wall time per op says little, CPU time per op is the cost.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// benchPrompt is a mid-dialogue prompt of a few hundred tokens.
func benchPrompt(tok *Tokenizer) []int32 {
	return tok.ApplyChatTemplate(gameMessages(3), TemplateOptions{AddGenerationPrompt: true})
}

// BenchmarkServeCompletion measures the simulator's own cost per completion
// request (JSON in, generation, JSON out), calling the handler directly.
func BenchmarkServeCompletion(b *testing.B) {
	srv, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	prompt := benchPrompt(srv.Tokenizer())
	body, _ := json.Marshal(completionReq(prompt, 128, 1, 7))
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", PathCompletions, bytes.NewReader(body))
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

// BenchmarkServeTokenize measures a /tokenize of a mid-dialogue conversation.
func BenchmarkServeTokenize(b *testing.B) {
	srv, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	body, _ := json.Marshal(map[string]any{"messages": gameMessages(3), "add_generation_prompt": true})
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", PathTokenize, bytes.NewReader(body)))
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

func BenchmarkAgentReply(b *testing.B) {
	tok := NewTokenizer()
	st := readDialogue(tok.parsePrompt(benchPrompt(tok)))
	m := scripted.Model{Encode: tok.Encode, AgreeProb: 0.3}
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for i := 0; b.Loop(); i++ {
		m.Reply(st.Dialogue, rand.New(rand.NewPCG(1, uint64(i))))
	}
}

func BenchmarkEncode(b *testing.B) {
	tok := NewTokenizer()
	text := RenderChat(gameMessages(3), TemplateOptions{AddGenerationPrompt: true})
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		tok.Encode(text)
	}
}
