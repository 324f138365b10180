package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzMaxBody is the body bound in the fuzz test: small, so that the
// fuzzer reaches it.
const fuzzMaxBody = 512

// oracle reads data as net/http does (http.ReadResponse, skipping 1xx
// interim responses as its Transport does, then the whole body). inBody
// says whether an error came from the body, after a valid head.
func oracle(data []byte, method string) (resp *http.Response, body []byte, inBody bool, err error) {
	br := bufio.NewReader(bytes.NewReader(data))
	for {
		resp, err = http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return nil, nil, false, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close()
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body, err != nil, err
}

// stricter reports whether our error for data is one of the refusals
// where readResponse is stricter than net/http on purpose: what no
// inference server sends, refused with a clear error, never read wrongly.
func stricter(err error, theirs *http.Response, theirBody []byte) bool {
	msg := err.Error()
	switch {
	case errors.Is(err, bufio.ErrBufferFull), strings.Contains(msg, "too long"):
		return true // a line longer than the read buffer
	case strings.Contains(msg, "malformed HTTP status line"):
		return true // extra spaces, or a status below 100
	case strings.Contains(msg, "HTTP/1.0 response") && theirs.ProtoMinor == 0:
		return true // a Transfer-Encoding in HTTP/1.0, faulty framing (RFC 9112 §6.1)
	case len(theirBody) > fuzzMaxBody, strings.Contains(msg, fmt.Sprintf("more than %d", fuzzMaxBody)):
		return true // the body bound
	}
	return false
}

// framingErr reports whether err is net/http's refusal of a response's
// Content-Length or Transfer-Encoding.
func framingErr(err error) bool {
	for _, m := range []string{"bad Content-Length", "empty Content-Length", "multiple Content-Length", "transfer encoding"} {
		if strings.Contains(err.Error(), m) {
			return true
		}
	}
	return false
}

// FuzzReadResponse: on any input, readResponse returns (no panic, no
// hang), with a body within its bound; on what net/http reads too it
// agrees with net/http (status, body, Retry-After headers), and it keeps
// the connection only where net/http would; what it accepts and net/http
// refuses is never a body net/http frames otherwise; what it refuses that
// net/http reads is one of its deliberate refusals (stricter).
func FuzzReadResponse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), true) // HEAD: no body follows
	f.Fuzz(checkAgainstNetHTTP)
}

// FuzzFramingHeaders: responses built from the values of the headers
// readResponse interprets (Connection, Content-Length, Transfer-Encoding,
// Retry-After), the version, the status and a body, chunked in pieces of
// chunk bytes or not, are read as net/http reads them (checkAgainstNetHTTP).
func FuzzFramingHeaders(f *testing.F) {
	f.Add(uint8(1), uint16(200), "keep-alive", "5", "", "", "hello", uint8(0))
	f.Add(uint8(1), uint16(200), "close", "", "chunked", "", `{"count":2}`, uint8(4))
	f.Add(uint8(1), uint16(429), "", "+2", "", "2", "{}", uint8(0))
	f.Add(uint8(0), uint16(200), "Keep-Alive, close", "", "", "", "body", uint8(0))
	f.Add(uint8(1), uint16(503), "upgrade,  close", "3", "", "Wed, 21 Oct 2015 07:28:00 GMT", "abc", uint8(0))
	f.Add(uint8(1), uint16(100), "", "", "", "", "", uint8(0))
	f.Fuzz(func(t *testing.T, minor uint8, status uint16, conn, length, te, retryAfter, body string, chunk uint8) {
		var b strings.Builder
		fmt.Fprintf(&b, "HTTP/1.%d %03d Reason\r\n", minor%2, status%1000)
		for _, h := range [][2]string{{"Connection", conn}, {"Content-Length", length}, {"Transfer-Encoding", te}, {"Retry-After", retryAfter}} {
			if strings.ContainsAny(h[1], "\r\n") {
				return // one header line each
			}
			if h[1] != "" {
				fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
			}
		}
		b.WriteString("\r\n")
		if chunk == 0 {
			b.WriteString(body)
		} else {
			for rest := body; rest != ""; {
				n := min(int(chunk), len(rest))
				fmt.Fprintf(&b, "%x\r\n%s\r\n", n, rest[:n])
				rest = rest[n:]
			}
			b.WriteString("0\r\n\r\n")
		}
		checkAgainstNetHTTP(t, []byte(b.String()), false)
	})
}

// checkAgainstNetHTTP reads data (the response to a HEAD request when
// head) with readResponse and with net/http, and fails where they disagree
// as FuzzReadResponse says they must not.
func checkAgainstNetHTTP(t *testing.T, data []byte, head bool) {
	method := http.MethodPost
	if head {
		method = http.MethodHead
	}
	br := bufio.NewReaderSize(bytes.NewReader(data), readBufferSize)
	ours, keep, err := readResponse(br, method, fuzzMaxBody)
	defer ours.Release()
	if err == nil && len(ours.Body) > fuzzMaxBody {
		t.Fatalf("readResponse(%q) read a body of %d bytes, more than its bound %d", data, len(ours.Body), fuzzMaxBody)
	}
	theirs, theirBody, inBody, terr := oracle(data, method)
	switch {
	case err != nil && terr == nil:
		if !stricter(err, theirs, theirBody) {
			t.Fatalf("readResponse(%q) = %v; net/http reads status %d, body %q", data, err, theirs.StatusCode, theirBody)
		}
	case err == nil && terr != nil:
		// A body net/http could not read must be the same up to its
		// error: what differs is then a chunked body's trailer, which
		// readResponse skips and net/http reads strictly (well-formed
		// header lines, a CRLF at the end).
		if inBody && (ours.Status != theirs.StatusCode || !bytes.Equal(ours.Body, theirBody)) {
			t.Fatalf("readResponse(%q) = status %d, body %q; net/http: status %d, body %q, then %v",
				data, ours.Status, ours.Body, theirs.StatusCode, theirBody, terr)
		}
		// Framing headers net/http refuses are refused too.
		if framingErr(terr) {
			t.Fatalf("readResponse(%q) = status %d, body %q; net/http: %v", data, ours.Status, ours.Body, terr)
		}
	case err == nil && terr == nil:
		if ours.Status != theirs.StatusCode || !bytes.Equal(ours.Body, theirBody) {
			t.Fatalf("readResponse(%q) = status %d, body %q; net/http: status %d, body %q",
				data, ours.Status, ours.Body, theirs.StatusCode, theirBody)
		}
		for _, k := range []string{"Retry-After", "Retry-After-Ms"} {
			// net/http keeps a space that a blank continuation line leaves
			// at the end of a value; retry.After trims it.
			want := slices.Clone(theirs.Header.Values(k))
			for i := range want {
				want[i] = strings.TrimSpace(want[i])
			}
			if got := ours.Header.Values(k); !slices.Equal(got, want) {
				t.Fatalf("readResponse(%q): %s %q; net/http: %q", data, k, got, want)
			}
		}
		if keep && theirs.Close {
			t.Fatalf("readResponse(%q) keeps the connection; net/http closes it", data)
		}
	}
}

// fuzzSeeds returns responses in the shapes servers send: vLLM's uvicorn
// (lower-case header names, chunked streams, Retry-After on a 429), the
// Go net/http server serve-sim runs on (recorded here from a live one),
// HTTP/1.0 and close-delimited bodies, interim responses, and the broken
// ones the unit tests refuse.
func fuzzSeeds(f *testing.F) []string {
	body := okTokenize
	seeds := []string{
		"HTTP/1.1 200 OK\r\ndate: Mon, 02 Jun 2025 10:00:00 GMT\r\nserver: uvicorn\r\ncontent-length: " +
			fmt.Sprint(len(body)) + "\r\ncontent-type: application/json\r\n\r\n" + body,
		"HTTP/1.1 200 OK\r\ndate: Mon, 02 Jun 2025 10:00:00 GMT\r\nserver: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8\r\n" +
			"transfer-encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n", len(body), body) + "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
		"HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\nretry-after-ms: 1500\r\ncontent-length: 32\r\n\r\n" +
			`{"error":{"message":"slow down"}`,
		"HTTP/1.1 503 Service Unavailable\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body,
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body,
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3;ext=1\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nnonsense\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After:\r\n  \t7 \r\n \r\nRetry-After-Ms: 1\r\n\t 5\r\nContent-Length: 2\r\n\r\n{}",
		"",
	}
	return append(seeds, recordGoServer(f)...)
}

// recordGoServer returns the raw responses of a Go net/http server (the
// kind serve-sim is) to the requests the client sends: a JSON answer, a
// flushed (chunked) one, an error with Retry-After, and an empty one.
func recordGoServer(f *testing.F) []string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, okTokenize)
		case "/flushed":
			io.WriteString(w, okTokenize[:10])
			w.(http.Flusher).Flush()
			io.WriteString(w, okTokenize[10:])
		case "/busy":
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	var out []string
	for _, path := range []string{"/json", "/flushed", "/busy", "/empty"} {
		nc, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			f.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		h := &Client{host: srv.Listener.Addr().String()}
		req := h.appendHead(nil, http.MethodPost, path, "", 0)
		req = append(req[:len(req)-2], "Connection: close\r\n\r\n"...)
		if _, err := nc.Write(req); err != nil {
			f.Fatal(err)
		}
		raw, err := io.ReadAll(nc)
		nc.Close()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(raw))
	}
	return out
}
