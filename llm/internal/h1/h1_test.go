package h1

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
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

// testMaxBody is the body bound the tests' clients have (llm's).
const testMaxBody = 256 << 20

func newTestClient(t *testing.T, base, auth string) *Client {
	t.Helper()
	h := New(base, auth, testMaxBody)
	if h == nil {
		t.Fatalf("New(%s) = nil, want the client's own HTTP/1.1", base)
	}
	t.Cleanup(h.Close)
	return h
}

// tokenizeOnce posts a tokenization as package llm does and returns the
// body of a 200 answer.
func tokenizeOnce(h *Client) (string, error) {
	return tokenizeCtx(context.Background(), h)
}

func tokenizeCtx(ctx context.Context, h *Client) (string, error) {
	resp, err := h.Do(ctx, time.Now().Add(10*time.Second), http.MethodPost, "/tokenize", "",
		[]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		return "", err
	}
	defer resp.Release()
	if resp.Status != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.Status)
	}
	return string(resp.Body), nil
}

// TestResponses: the client's own HTTP/1.1 exchange reads every framing
// an inference server may answer with, and refuses what is broken.
func TestResponses(t *testing.T) {
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
		// found by FuzzReadResponse and FuzzFramingHeaders (net/http agrees)
		{"folded header", fmt.Sprintf("HTTP/1.1 200 OK\r\nX-A: 1\r\n\t2\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", true},
		{"close among the connection tokens", fmt.Sprintf("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: %d\r\n\r\n%s", len(body), body), "", false},
		{"signed content-length", fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: +%d\r\n\r\n%s", len(body), body), "bad Content-Length", false},
		{"two transfer-encodings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + strings.TrimPrefix(chunked, "HTTP/1.1 200 OK\r\n"), "more than one Transfer-Encoding", false},
		{"HTTP/1.0 chunked", "HTTP/1.0" + strings.TrimPrefix(chunked, "HTTP/1.1"), "HTTP/1.0 response", false},
		{"folded first header", "HTTP/1.1 200 OK\r\n X-A: 1\r\n\r\n", "malformed HTTP header", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, tt.resp)
			h := newTestClient(t, s.url(), "")
			for i := 0; i < 2; i++ {
				res, err := tokenizeOnce(h)
				if tt.wantErr == "" {
					if err != nil || res != okTokenize {
						t.Fatalf("request %d: Do = %q, %v; want %q", i, res, err, okTokenize)
					}
				} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("request %d: Do = %v, want an error saying %q", i, err, tt.wantErr)
				}
			}
			if wantConns := map[bool]int64{true: 1, false: 2}[tt.reuse]; s.conns.Load() != wantConns {
				t.Errorf("%d connections for 2 requests, want %d", s.conns.Load(), wantConns)
			}
		})
	}
}

// TestCloseDelimited: a body without a length ends when the server
// closes the connection.
func TestCloseDelimited(t *testing.T) {
	s := newRawServer(t, "HTTP/1.1 200 OK\r\n\r\n"+okTokenize)
	s.closeAfter = 1
	h := newTestClient(t, s.url(), "")
	if res, err := tokenizeOnce(h); err != nil || res != okTokenize {
		t.Fatalf("Do = %q, %v; want %q", res, err, okTokenize)
	}
}

// TestRequestHead: the request line carries the base URL's path, and the
// headers the host, the length, the content type and the key.
func TestRequestHead(t *testing.T) {
	s := newRawServer(t, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(okTokenize), okTokenize))
	h := newTestClient(t, s.url()+"/prefix", "Bearer k3y")
	if _, err := tokenizeOnce(h); err != nil {
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

// TestStaleConnection: a kept connection the server has closed (vLLM's
// uvicorn closes keep-alive connections idle for 5 s) is not an error: the
// request goes out on a new connection, whether the close is seen before
// the connection is reused (after checkAfter idle) or by the exchange.
func TestStaleConnection(t *testing.T) {
	for _, idle := range []time.Duration{0, checkAfter + 20*time.Millisecond} {
		t.Run(fmt.Sprint("idle ", idle), func(t *testing.T) {
			s := newRawServer(t, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(okTokenize), okTokenize))
			s.closeAfter = 1 // each connection closed after one answer, without a word
			h := newTestClient(t, s.url(), "")
			for i := 0; i < 4; i++ {
				time.Sleep(idle)
				if _, err := tokenizeOnce(h); err != nil {
					t.Fatalf("request %d on a connection the server closed: %v", i, err)
				}
			}
			if s.conns.Load() != 4 {
				t.Errorf("%d connections, want 4", s.conns.Load())
			}
		})
	}
}

// TestNew: plain-http endpoints get a Client; https and a password in the
// URL get none (net/http serves them).
func TestNew(t *testing.T) {
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
		if got := New(tt.base, "", testMaxBody) != nil; got != tt.want {
			t.Errorf("New(%s) used: %v, want %v", tt.base, got, tt.want)
		}
	}
	if h := New("http://127.0.0.1", "", testMaxBody); h == nil || h.addr != "127.0.0.1:80" {
		t.Errorf("New without a port dials %v, want 127.0.0.1:80", h)
	}
}

// TestCancelInterruptsRead: cancelling the caller's context ends a
// request the server holds, at once.
func TestCancelInterruptsRead(t *testing.T) {
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
	h := newTestClient(t, "http://"+ln.Addr().String(), "")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = tokenizeCtx(ctx, h)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Do cancelled after 100ms = %v after %v, want an error at once", err, time.Since(start))
	}
}

// TestFoldedHeaderOneByteAtATime: a header continued on the next line
// (obs-fold) reads the same when the lines arrive one byte at a time, so
// that each read overwrites the buffer the previous line was in.
func TestFoldedHeaderOneByteAtATime(t *testing.T) {
	const in = "HTTP/1.1 429 Too Many Requests\r\nRetry-After:\r\n  \t7 \r\n \r\nRetry-After-Ms: 1\r\n\t 5\r\nContent-Length: 2\r\n\r\n{}"
	for name, r := range map[string]io.Reader{"at once": strings.NewReader(in), "one byte at a time": iotest.OneByteReader(strings.NewReader(in))} {
		resp, keep, err := readResponse(bufio.NewReaderSize(r, readBufferSize), http.MethodPost, testMaxBody)
		if err != nil || resp.Status != 429 || string(resp.Body) != "{}" || !keep {
			t.Fatalf("%s: readResponse = %d %q (keep %v), %v; want 429 {} (keep)", name, resp.Status, resp.Body, keep, err)
		}
		if got, want := resp.Header.Values("Retry-After"), []string{"7"}; !slices.Equal(got, want) {
			t.Errorf("%s: Retry-After %q, want %q", name, got, want)
		}
		if got, want := resp.Header.Values("Retry-After-Ms"), []string{"1 5"}; !slices.Equal(got, want) {
			t.Errorf("%s: Retry-After-Ms %q, want %q", name, got, want)
		}
		resp.Release()
	}
}
