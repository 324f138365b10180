package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestH1Eligibility: plain-http endpoints use the client's own HTTP/1.1
// (package h1, whose tests cover https, passwords and proxies); a given
// HTTPClient uses net/http.
func TestH1Eligibility(t *testing.T) {
	t.Setenv("HTTP_PROXY", "")
	t.Setenv("http_proxy", "")
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	if c := newTestClient(t, testOptions("http://127.0.0.1:8000")); c.endpoints()[0].h1 == nil {
		t.Error("a plain-http endpoint does not use the client's own HTTP/1.1")
	}
	if c := newTestClient(t, testOptions("https://127.0.0.1:8000")); c.endpoints()[0].h1 != nil {
		t.Error("an https endpoint uses the client's own HTTP/1.1")
	}
	c := newTestClient(t, Options{Endpoints: []string{"http://127.0.0.1:8000"}, HTTPClient: http.DefaultClient})
	if c.endpoints()[0].h1 != nil {
		t.Error("a client given an HTTPClient uses its own HTTP/1.1")
	}
}

// TestH1CancelInterruptsRead: cancelling the caller's context ends a
// request the server holds, at once.
func TestH1CancelInterruptsRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it: never answer
		}
	}()
	c := newTestClient(t, testOptions("http://"+ln.Addr().String()))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = c.Tokenize(ctx, TokenizeRequest{Messages: []Message{{Role: "user", Content: "x"}}})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("Tokenize cancelled after 100ms = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
}
