package reward

import (
	"context"
	"net/http"
	"testing"

	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

// BenchmarkCAJudgeCacheHit measures the cost of a verdict served from the
// judge cache (the resumed-run path): prompt rendering, hashing and lookup.
func BenchmarkCAJudgeCacheHit(b *testing.B) {
	srv := chattest.NewFakeAPI(b, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, okReply)
	})
	defer srv.Close()
	opts := testClientOptions(srv)
	opts.CacheDir = b.TempDir()
	c, err := chat.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	j := NewCAJudge(c)
	r := therapist()
	if _, err := j.Judge(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Judge(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCAJudgeHTTP measures one uncached judge call against a local
// httptest server (client overhead plus loopback HTTP).
func BenchmarkCAJudgeHTTP(b *testing.B) {
	srv := chattest.NewFakeAPI(b, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, okReply)
	})
	defer srv.Close()
	c, err := chat.New(testClientOptions(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	j := NewCAJudge(c)
	r := therapist()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Judge(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseScoreFallback measures the tolerant parser on prose.
func BenchmarkParseScoreFallback(b *testing.B) {
	reply := chat.Reply{Content: "The plan integrates both sides well, with minor gaps in long-term support.\n\n**Score:** 4/5"}
	for b.Loop() {
		if _, _, err := parseScore(reply); err != nil {
			b.Fatal(err)
		}
	}
}
