package llm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer answers each request read on a connection with the next of
// its raw responses (the last one repeats), recording every request line
// and the connections accepted.
type rawServer struct {
	ln        net.Listener
	responses []string
	mu        sync.Mutex
	requests  []string // request line and headers, per request
	conns     atomic.Int64
	// closeAfter closes a connection after this many responses (0: never).
	closeAfter int
}

func newRawServer(t *testing.T, responses ...string) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, responses: responses}
	t.Cleanup(func() { ln.Close() })
	go s.serve()
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) serve() {
	n := 0
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for k := 1; ; k++ {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				var head strings.Builder
				fmt.Fprintf(&head, "%s %s %s\n", req.Method, req.URL.RequestURI(), req.Proto)
				req.Header.Write(&head)
				s.mu.Lock()
				s.requests = append(s.requests, head.String())
				resp := s.responses[min(n, len(s.responses)-1)]
				n++
				s.mu.Unlock()
				if _, err := io.WriteString(c, resp); err != nil {
					return
				}
				if s.closeAfter > 0 && k >= s.closeAfter {
					return
				}
			}
		}()
	}
}

const okTokenize = `{"count":2,"max_model_len":9,"tokens":[5,6]}`

func tokenizeOnce(c *Client) (TokenizeResult, error) {
	return c.Tokenize(context.Background(), TokenizeRequest{Messages: []Message{{Role: "user", Content: "x"}}})
}

// TestH1Responses: the client's own HTTP/1.1 exchange reads every framing
// an inference server may answer with, and refuses what is broken.
func TestH1Responses(t *testing.T) {
	body := okTokenize
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 10, body[:10], len(body)-10, body[10:])
	for _, tt := range []struct {
		name    string
		resp    string
		wantErr string // "" for success
		reuse   bool   // the connection carries the next request
	}{
		{"content-length", fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", true},
		{"header names in any case", fmt.Sprintf("HTTP/1.1 200 OK\r\ncontent-LENGTH: %d\r\n\r\n%s", len(body), body), "", true},
		{"chunked", chunked, "", true},
		{"chunked with trailer", strings.TrimSuffix(chunked, "\r\n") + "X-Trailer: 1\r\n\r\n", "", true},
		{"interim 100 first", "HTTP/1.1 100 Continue\r\n\r\n" + fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", true},
		{"connection close", fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", false},
		{"HTTP/1.0", fmt.Sprintf("HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", false},
		{"HTTP/1.0 keep-alive", fmt.Sprintf("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", true},
		{"bad status line", "HTTP/2 200 OK\r\n\r\n", "malformed HTTP status line", false},
		{"bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "bad Content-Length", false},
		{"two content-lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "bad Content-Length", false},
		{"gzip transfer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported Transfer-Encoding", false},
		{"header without colon", "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", "malformed HTTP header", false},
		{"header line too long", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 20000) + "\r\n\r\n", "too long", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, tt.resp)
			opts := testOptions(s.url())
			opts.Retry.MaxRetries = -1
			c := newTestClient(t, opts)
			if c.eps[0].h1 == nil {
				t.Fatal("a plain-http endpoint does not use the client's own HTTP/1.1")
			}
			for i := 0; i < 2; i++ {
				res, err := tokenizeOnce(c)
				if tt.wantErr == "" {
					if err != nil || len(res.Tokens) != 2 || res.Tokens[1] != 6 {
						t.Fatalf("request %d: Tokenize = %+v, %v", i, res, err)
					}
				} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("request %d: Tokenize = %v, want an error saying %q", i, err, tt.wantErr)
				}
			}
			if wantConns := map[bool]int64{true: 1, false: 2}[tt.reuse]; s.conns.Load() != wantConns {
				t.Errorf("%d connections for 2 requests, want %d", s.conns.Load(), wantConns)
			}
		})
	}
}

// TestH1CloseDelimited: a body without a length ends when the server
// closes the connection.
func TestH1CloseDelimited(t *testing.T) {
	s := newRawServer(t, "HTTP/1.1 200 OK\r\n\r\n"+okTokenize)
	s.closeAfter = 1
	c := newTestClient(t, testOptions(s.url()))
	if res, err := tokenizeOnce(c); err != nil || len(res.Tokens) != 2 {
		t.Fatalf("Tokenize = %+v, %v", res, err)
	}
}

// TestH1RequestHead: the request line carries the base URL's path, and the
// headers the host, the length, the content type and the key.
func TestH1RequestHead(t *testing.T) {
	s := newRawServer(t, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(okTokenize), okTokenize))
	opts := testOptions(s.url() + "/prefix/v1")
	opts.APIKey = "k3y"
	c := newTestClient(t, opts)
	if _, err := tokenizeOnce(c); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	head := s.requests[0]
	s.mu.Unlock()
	for _, want := range []string{"POST /prefix/tokenize HTTP/1.1\n", "Authorization: Bearer k3y", "Content-Type: application/json", "Content-Length: "} {
		if !strings.Contains(head, want) {
			t.Errorf("request head %q lacks %q", head, want)
		}
	}
}

// TestH1StaleConnection: a kept connection the server has closed (vLLM's
// uvicorn closes keep-alive connections idle for 5 s) is not an error: the
// request goes out on a new connection, whether the close is seen before
// the connection is reused (after h1CheckAfter idle) or by the exchange.
func TestH1StaleConnection(t *testing.T) {
	for _, idle := range []time.Duration{0, h1CheckAfter + 20*time.Millisecond} {
		t.Run(fmt.Sprint("idle ", idle), func(t *testing.T) {
			s := newRawServer(t, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(okTokenize), okTokenize))
			s.closeAfter = 1 // each connection closed after one answer, without a word
			opts := testOptions(s.url())
			opts.Retry.MaxRetries = -1
			c := newTestClient(t, opts)
			for i := 0; i < 4; i++ {
				time.Sleep(idle)
				if _, err := tokenizeOnce(c); err != nil {
					t.Fatalf("request %d on a connection the server closed: %v", i, err)
				}
			}
			if st := c.Stats(); st.TransportErrors != 0 || st.Attempts != 4 || s.conns.Load() != 4 {
				t.Errorf("stats %+v, %d connections; want 4 attempts, no transport error, 4 connections", st, s.conns.Load())
			}
		})
	}
}

// TestH1Eligibility: plain-http endpoints use the client's own HTTP/1.1;
// https, a password in the URL, a proxy from the environment and a given
// HTTPClient use net/http.
func TestH1Eligibility(t *testing.T) {
	t.Setenv("HTTP_PROXY", "")
	t.Setenv("http_proxy", "")
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	for _, tt := range []struct {
		base string
		want bool
	}{
		{"http://127.0.0.1:8000", true},
		{"http://localhost", true},
		{"http://[::1]:8000/prefix", true},
		{"https://127.0.0.1:8000", false},
		{"http://user:pw@127.0.0.1:8000", false},
	} {
		if got := newH1(tt.base, "") != nil; got != tt.want {
			t.Errorf("newH1(%s) used: %v, want %v", tt.base, got, tt.want)
		}
	}
	if h := newH1("http://127.0.0.1", ""); h == nil || h.addr != "127.0.0.1:80" {
		t.Errorf("newH1 without a port dials %v, want 127.0.0.1:80", h)
	}
	c := newTestClient(t, Options{Endpoints: []string{"http://127.0.0.1:8000"}, HTTPClient: http.DefaultClient})
	if c.eps[0].h1 != nil {
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
