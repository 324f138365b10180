// Package h1 is the policy client's own HTTP/1.1 exchange for plain-http
// endpoints, the hot path of a rollout (two requests a turn, thousands in
// flight). With net/http each request passed through three goroutines (the
// caller, the connection's write loop and its read loop) and their
// channels, a 64 KiB pair of buffers stayed with every connection, and
// about half of parley's CPU per request went to that machinery (the
// rollout benchmarks' profile). Here the caller writes the request
// (headers and body in one write) and reads the response itself on a
// pooled connection: no goroutine per connection, no buffer held by an
// idle one, deadlines on the socket.
//
// It speaks what inference servers answer: HTTP/1.0 and 1.1 responses,
// Content-Length, chunked or close-delimited bodies, keep-alive. Endpoints
// over https, behind a proxy from the environment or with a password in
// the URL get no Client (New returns nil): package llm uses net/http for
// them, and for clients given llm.Options.HTTPClient.
package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Client is the exchange with one endpoint: its address, headers and idle
// connections.
type Client struct {
	addr   string // host:port to dial
	host   string // the Host header
	prefix string // the base URL's path, escaped ("" or "/prefix")
	auth   string // the Authorization header, "" for none
	dialer net.Dialer
	// maxBody bounds a response body read into memory.
	maxBody int

	mu     sync.Mutex
	idle   []*conn // most recently used last
	closed bool
}

// conn is one connection and when it was last put back.
type conn struct {
	nc        net.Conn
	idleSince time.Time
}

const (
	// maxIdle bounds the idle connections kept per endpoint (net/http's
	// MaxIdleConnsPerHost in the transport this replaces).
	maxIdle = 2048
	// idleTimeout closes connections idle longer (net/http's
	// IdleConnTimeout).
	idleTimeout = 90 * time.Second
	// checkAfter: a connection idle longer is checked for a close by the
	// server before it is used again (vLLM's uvicorn closes keep-alive
	// connections idle for 5 s); one reused sooner is used as is.
	checkAfter = 50 * time.Millisecond
	// readBufferSize is the read buffer lent to an exchange (pooled, not
	// held by idle connections).
	readBufferSize = 16 << 10
)

// New returns the exchange for the endpoint at base (a URL, its path the
// prefix of every request's), or nil when the endpoint needs net/http: not
// plain http, a password in the URL, or a proxy from the environment. auth
// is the Authorization header ("" for none); a response body longer than
// maxBody bytes is an error.
func New(base, auth string, maxBody int) *Client {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" {
		return nil
	}
	if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || proxy != nil {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &Client{addr: addr, host: u.Host, prefix: u.EscapedPath(), auth: auth, maxBody: maxBody,
		dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
}

// Response is what an exchange returns: the status, the Retry-After and
// Retry-After-Ms headers (nil when there are none), and the body (nil for
// a response without one) in a pooled buffer that Release gives back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	buf    *buffer
}

// Release gives the body's buffer back to the pool; Body is nil after it.
func (r *Response) Release() {
	if r.buf != nil && cap(r.buf.b) <= maxPooled {
		bufPool.Put(r.buf)
	}
	r.buf, r.Body = nil, nil
}

// bufPool holds the buffers of requests written and responses read.
var bufPool sync.Pool // of *buffer

// buffer is a pooled buffer.
type buffer struct{ b []byte }

// maxPooled bounds the capacity of a buffer kept in bufPool.
const maxPooled = 1 << 20

// getBuf returns a pooled buffer, empty, with room for at least n bytes.
func getBuf(n int) *buffer {
	p, _ := bufPool.Get().(*buffer)
	if p == nil {
		p = &buffer{}
	}
	if cap(p.b) < n {
		p.b = make([]byte, 0, max(n, 2*cap(p.b)))
	}
	p.b = p.b[:0]
	return p
}

// errStale marks an exchange on a reused connection that the server had
// closed (it answered nothing): the request is sent again on a new one.
var errStale = errors.New("the server closed the idle connection")

// Do sends one request and reads its response, before deadline and until
// ctx ends. header is extra header lines, each ending in CRLF ("" for
// none). A reused connection the server had closed while it was idle is
// replaced once by a new connection.
func (h *Client) Do(ctx context.Context, deadline time.Time, method, path, header string, body []byte) (Response, error) {
	for fresh := false; ; fresh = true {
		c, reused, err := h.get(ctx, deadline, fresh)
		if err != nil {
			return Response{}, err
		}
		resp, keep, err := c.exchange(ctx, deadline, h, method, path, header, body)
		if err == nil {
			if keep {
				h.put(c)
			} else {
				c.nc.Close()
			}
			return resp, nil
		}
		c.nc.Close()
		if errors.Is(err, errStale) && reused && !fresh && ctx.Err() == nil && time.Now().Before(deadline) {
			continue
		}
		return Response{}, err
	}
}

// get returns an idle connection (reused) or dials a new one (always a new
// one when fresh).
func (h *Client) get(ctx context.Context, deadline time.Time, fresh bool) (*conn, bool, error) {
	now := time.Now()
	for !fresh {
		h.mu.Lock()
		n := len(h.idle)
		if n == 0 || h.closed {
			h.mu.Unlock()
			break
		}
		c := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		idle := now.Sub(c.idleSince)
		if idle > idleTimeout || (idle > checkAfter && !peerOpen(c.nc)) {
			c.nc.Close()
			continue
		}
		return c, true, nil
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := h.dialer.DialContext(dctx, "tcp", h.addr)
	if err != nil {
		return nil, false, err
	}
	return &conn{nc: nc}, false, nil
}

// put keeps c for reuse, or closes it when the pool is full or closed.
func (h *Client) put(c *conn) {
	c.idleSince = time.Now()
	h.mu.Lock()
	if h.closed || len(h.idle) >= maxIdle {
		h.mu.Unlock()
		c.nc.Close()
		return
	}
	h.idle = append(h.idle, c)
	h.mu.Unlock()
}

// Close closes the idle connections; later ones are closed when put back.
func (h *Client) Close() {
	h.mu.Lock()
	idle := h.idle
	h.idle, h.closed = nil, true
	h.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// readerPool lends read buffers to exchanges.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// longAgo is a deadline in the past: it interrupts a blocked read or write.
var longAgo = time.Unix(1, 0)

// exchange writes the request and reads the response on c. keep says
// whether c can carry another request.
func (c *conn) exchange(ctx context.Context, deadline time.Time, h *Client, method, path, header string, body []byte) (resp Response, keep bool, err error) {
	if err := c.nc.SetDeadline(deadline); err != nil {
		return Response{}, false, err
	}
	if ctx.Done() != nil {
		// The end of ctx interrupts the exchange. When it came too late to
		// be stopped, it may still touch the connection: not reused.
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(longAgo) })
		defer func() {
			if !stop() {
				keep = false
			}
		}()
	}
	// One write of the headers and the body, copied together: a memmove
	// costs less than a second system call, and writev would hide the
	// exchange from the race detector (which follows read and write only).
	out := getBuf(512 + len(header) + len(body))
	out.b = append(h.appendHead(out.b, method, path, header, len(body)), body...)
	_, err = c.nc.Write(out.b)
	bufPool.Put(out)
	if err != nil {
		if isClosedErr(err) {
			err = fmt.Errorf("%w: %w", errStale, err)
		}
		return Response{}, false, err
	}
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(c.nc)
	defer func() {
		br.Reset(nil)
		readerPool.Put(br)
	}()
	resp, keep, err = readResponse(br, method, h.maxBody)
	if err == nil && br.Buffered() > 0 {
		keep = false // bytes after the response: not reusable
	}
	return resp, keep, err
}

// appendHead appends the request line and headers.
func (h *Client) appendHead(b []byte, method, path, header string, n int) []byte {
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, h.prefix...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, h.host...)
	b = append(b, "\r\nUser-Agent: parley\r\n"...)
	if n > 0 || method == http.MethodPost {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, "\r\n"...)
	}
	if h.auth != "" {
		b = append(b, "Authorization: "...)
		b = append(b, h.auth...)
		b = append(b, "\r\n"...)
	}
	b = append(b, header...)
	return append(b, "\r\n"...)
}

// readResponse reads one response (skipping 1xx interim ones) and its body,
// of at most maxBody bytes, into a pooled buffer. It reports whether the
// connection can carry another request.
func readResponse(br *bufio.Reader, method string, maxBody int) (Response, bool, error) {
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if first && len(line) == 0 && isClosedErr(err) {
				return Response{}, false, fmt.Errorf("%w: %w", errStale, err)
			}
			return Response{}, false, fmt.Errorf("reading the response: %w", unexpectedEOF(err))
		}
		line = trimCRLF(line)
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return Response{}, false, fmt.Errorf("malformed HTTP status line %q", clip(string(line)))
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 || (len(line) > 12 && line[12] != ' ') {
			return Response{}, false, fmt.Errorf("malformed HTTP status line %q", clip(string(line)))
		}
		minor := line[7] // line is overwritten by the next read
		length := int64(-1)
		chunked := false
		// HTTP/1.1 keeps the connection unless it says close; HTTP/1.0
		// only when it says keep-alive (and not close).
		hasClose, hasKeepAlive := false, false
		var header http.Header
		var fold [256]byte // room for a header line and its continuations
		for i := 0; ; i++ {
			hl, err := br.ReadSlice('\n')
			if err != nil {
				return Response{}, false, headerErr(err)
			}
			hl = trimCRLF(hl)
			if len(hl) == 0 {
				break
			}
			if i == 0 && (hl[0] == ' ' || hl[0] == '\t') {
				return Response{}, false, fmt.Errorf("malformed HTTP header %q: a continuation line first", clip(string(hl)))
			}
			if hl, err = continued(br, hl, fold[:0]); err != nil {
				return Response{}, false, err
			}
			colon := bytes.IndexByte(hl, ':')
			if colon <= 0 {
				return Response{}, false, fmt.Errorf("malformed HTTP header %q", clip(string(hl)))
			}
			key, val := hl[:colon], bytes.TrimSpace(hl[colon+1:])
			switch {
			case asciiEqualFold(key, "content-length"):
				n, err := strconv.ParseInt(string(val), 10, 64)
				if err != nil || len(val) == 0 || val[0] < '0' || val[0] > '9' || (length >= 0 && n != length) {
					return Response{}, false, fmt.Errorf("bad Content-Length %q", clip(string(val)))
				}
				length = n
			case asciiEqualFold(key, "transfer-encoding"):
				if minor == '0' {
					// RFC 9112 §6.1: an HTTP/1.0 message with a
					// Transfer-Encoding has faulty framing (net/http ignores
					// the header and reads the body by another rule).
					return Response{}, false, errors.New("malformed HTTP/1.0 response: it has a Transfer-Encoding")
				}
				if !asciiEqualFold(val, "chunked") {
					return Response{}, false, fmt.Errorf("unsupported Transfer-Encoding %q", clip(string(val)))
				}
				if chunked {
					return Response{}, false, errors.New("more than one Transfer-Encoding")
				}
				chunked = true
			case asciiEqualFold(key, "connection"):
				hasClose = hasClose || hasToken(val, "close")
				hasKeepAlive = hasKeepAlive || hasToken(val, "keep-alive")
			case asciiEqualFold(key, "retry-after"), asciiEqualFold(key, "retry-after-ms"):
				if header == nil {
					header = http.Header{}
				}
				header.Add(string(key), string(val))
			}
		}
		if status < 200 && status != http.StatusSwitchingProtocols {
			continue // 100 Continue, 103 Early Hints: the response follows
		}
		keep := !hasClose && (minor == '1' || hasKeepAlive)
		resp := Response{Status: status, Header: header}
		if method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified || status < 200 {
			return resp, keep && status >= 200, nil
		}
		resp.buf = getBuf(0)
		switch {
		case chunked:
			err = readAll(&resp.buf.b, httputil.NewChunkedReader(br), maxBody)
			if err == nil {
				err = skipTrailer(br)
			}
		case length >= 0:
			if length > int64(maxBody) {
				resp.Release()
				return Response{}, false, fmt.Errorf("reading the response: the body is %d bytes, more than %d", length, maxBody)
			}
			b := resp.buf.b
			if int64(cap(b)) < length {
				b = make([]byte, length)
			}
			b = b[:length]
			_, err = io.ReadFull(br, b)
			resp.buf.b = b
		default:
			keep = false // the body ends when the server closes
			err = readAll(&resp.buf.b, br, maxBody)
		}
		if err != nil {
			resp.Release()
			return Response{}, false, fmt.Errorf("reading the response: %w", unexpectedEOF(err))
		}
		resp.Body = resp.buf.b
		return resp, keep, nil
	}
}

// headerErr is the error of a failed read of a header line.
func headerErr(err error) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return errors.New("reading the response: a header line is too long")
	}
	return fmt.Errorf("reading the response: %w", unexpectedEOF(err))
}

// continued returns the header line hl (read by ReadSlice, its CRLF
// trimmed) with the lines that continue it, obs-fold (RFC 9112 §5.2:
// lines that start with a space or a tab), each trimmed and joined to it
// by a space, as net/http reads them. hl is copied to buf's array before
// br is read again, which may overwrite it.
func continued(br *bufio.Reader, hl, buf []byte) ([]byte, error) {
	if br.Buffered() > 0 {
		if next, _ := br.Peek(1); next[0] != ' ' && next[0] != '\t' {
			return hl, nil // the common case: no continuation, no copy
		}
	}
	line := append(buf, hl...)
	for {
		next, err := br.Peek(1)
		if err != nil || (next[0] != ' ' && next[0] != '\t') {
			return line, nil // a read error comes again with the next line
		}
		cl, err := br.ReadSlice('\n')
		if err != nil {
			return nil, headerErr(err)
		}
		line = append(bytes.TrimRight(line, " \t"), ' ')
		line = append(line, bytes.Trim(trimCRLF(cl), " \t")...)
	}
}

// readAll appends r to *b, up to maxBody bytes.
func readAll(b *[]byte, r io.Reader, maxBody int) error {
	buf := (*b)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxBody {
			*b = buf
			return fmt.Errorf("the body is more than %d bytes", maxBody)
		}
		if err == io.EOF {
			*b = buf
			return nil
		}
		if err != nil {
			*b = buf
			return err
		}
	}
}

// skipTrailer reads the trailer section after a chunked body, up to its
// empty line.
func skipTrailer(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(trimCRLF(line)) == 0 {
			return nil
		}
	}
}

func trimCRLF(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// hasToken reports whether the comma-separated list v (a Connection
// header) has the lower-case token, in any case.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte{','})
		if asciiEqualFold(bytes.Trim(t, " \t"), token) {
			return true
		}
	}
	return false
}

// asciiEqualFold reports whether b equals the lower-case ASCII s, ignoring
// case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// isClosedErr reports whether err is how a read finds a connection the
// server closed: an EOF or a reset.
func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// unexpectedEOF turns an EOF inside a response into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maxErrorText bounds the bytes of a response quoted in an error.
const maxErrorText = 512

// clip shortens s to maxErrorText bytes on a rune boundary (as package llm
// clips what it quotes).
func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
