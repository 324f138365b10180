package llm

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
)

// h1 is the client's own HTTP/1.1 exchange for plain-http endpoints, the
// hot path of a rollout (two requests a turn, thousands in flight). With
// net/http each request passed through three goroutines (the caller, the
// connection's write loop and its read loop) and their channels, a 64 KiB
// pair of buffers stayed with every connection, and about half of parley's
// CPU per request went to that machinery (the rollout benchmarks' profile).
// Here the caller writes the request (headers and body in one write) and
// reads the response itself on a pooled connection: no goroutine per
// connection, no buffer held by an idle one, deadlines on the socket.
//
// It speaks what inference servers answer: HTTP/1.0 and 1.1 responses,
// Content-Length, chunked or close-delimited bodies, keep-alive. Endpoints
// over https, behind a proxy from the environment or with a password in
// the URL, and clients given Options.HTTPClient, use net/http instead.
type h1 struct {
	addr   string // host:port to dial
	host   string // the Host header
	prefix string // the base URL's path, escaped ("" or "/prefix")
	auth   string // the Authorization header, "" for none
	dialer net.Dialer

	mu     sync.Mutex
	idle   []*h1Conn // most recently used last
	closed bool
}

// h1Conn is one connection and when it was last put back.
type h1Conn struct {
	nc        net.Conn
	idleSince time.Time
}

const (
	// h1MaxIdle bounds the idle connections kept per endpoint (net/http's
	// MaxIdleConnsPerHost in the transport this replaces).
	h1MaxIdle = 2048
	// h1IdleTimeout closes connections idle longer (net/http's
	// IdleConnTimeout).
	h1IdleTimeout = 90 * time.Second
	// h1CheckAfter: a connection idle longer is checked for a close by the
	// server before it is used again (vLLM's uvicorn closes keep-alive
	// connections idle for 5 s); one reused sooner is used as is.
	h1CheckAfter = 50 * time.Millisecond
	// h1ReadBufferSize is the read buffer lent to an exchange (pooled, not
	// held by idle connections).
	h1ReadBufferSize = 16 << 10
)

// newH1 returns the exchange for the endpoint at base, or nil when the
// endpoint needs net/http: not plain http, a password in the URL, or a
// proxy from the environment.
func newH1(base, auth string) *h1 {
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
	return &h1{addr: addr, host: u.Host, prefix: u.EscapedPath(), auth: auth,
		dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
}

// h1Response is what an exchange returns: the status, the Retry-After and
// Retry-After-Ms headers (nil when there are none), and the body in a
// pooled buffer that release gives back.
type h1Response struct {
	status int
	header http.Header
	body   *bodyBuf
}

func (r *h1Response) release() {
	if r.body != nil && cap(r.body.b) <= maxPooledBody {
		bodyPool.Put(r.body)
	}
	r.body = nil
}

// errStale marks an exchange on a reused connection that the server had
// closed (it answered nothing): the request is sent again on a new one.
var errStale = errors.New("the server closed the idle connection")

// do sends one request and reads its response, before deadline and until
// ctx ends. A reused connection the server had closed while it was idle is
// replaced once by a new connection.
func (h *h1) do(ctx context.Context, deadline time.Time, method, path string, body []byte) (h1Response, error) {
	for fresh := false; ; fresh = true {
		c, reused, err := h.get(ctx, deadline, fresh)
		if err != nil {
			return h1Response{}, err
		}
		resp, keep, err := c.exchange(ctx, deadline, h, method, path, body)
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
		return h1Response{}, err
	}
}

// get returns an idle connection (reused) or dials a new one (always a new
// one when fresh).
func (h *h1) get(ctx context.Context, deadline time.Time, fresh bool) (*h1Conn, bool, error) {
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
		if idle > h1IdleTimeout || (idle > h1CheckAfter && !peerOpen(c.nc)) {
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
	return &h1Conn{nc: nc}, false, nil
}

// put keeps c for reuse, or closes it when the pool is full or closed.
func (h *h1) put(c *h1Conn) {
	c.idleSince = time.Now()
	h.mu.Lock()
	if h.closed || len(h.idle) >= h1MaxIdle {
		h.mu.Unlock()
		c.nc.Close()
		return
	}
	h.idle = append(h.idle, c)
	h.mu.Unlock()
}

// close closes the idle connections; later ones are closed when put back.
func (h *h1) close() {
	h.mu.Lock()
	idle := h.idle
	h.idle, h.closed = nil, true
	h.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// readerPool lends read buffers to exchanges.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, h1ReadBufferSize) }}

// longAgo is a deadline in the past: it interrupts a blocked read or write.
var longAgo = time.Unix(1, 0)

// exchange writes the request and reads the response on c. keep says
// whether c can carry another request.
func (c *h1Conn) exchange(ctx context.Context, deadline time.Time, h *h1, method, path string, body []byte) (resp h1Response, keep bool, err error) {
	if err := c.nc.SetDeadline(deadline); err != nil {
		return h1Response{}, false, err
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
	out := getBody(512 + len(body))
	out.b = append(h.appendHead(out.b, method, path, len(body)), body...)
	_, err = c.nc.Write(out.b)
	bodyPool.Put(out)
	if err != nil {
		if isClosedErr(err) {
			err = fmt.Errorf("%w: %w", errStale, err)
		}
		return h1Response{}, false, err
	}
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(c.nc)
	defer func() {
		br.Reset(nil)
		readerPool.Put(br)
	}()
	resp, keep, err = readResponse(br, method)
	if err == nil && br.Buffered() > 0 {
		keep = false // bytes after the response: not reusable
	}
	return resp, keep, err
}

// appendHead appends the request line and headers.
func (h *h1) appendHead(b []byte, method, path string, n int) []byte {
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
	return append(b, "\r\n"...)
}

// readResponse reads one response (skipping 1xx interim ones) and its body
// into a pooled buffer.
func readResponse(br *bufio.Reader, method string) (h1Response, bool, error) {
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if first && len(line) == 0 && isClosedErr(err) {
				return h1Response{}, false, fmt.Errorf("%w: %w", errStale, err)
			}
			return h1Response{}, false, fmt.Errorf("reading the response: %w", unexpectedEOF(err))
		}
		line = trimCRLF(line)
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return h1Response{}, false, fmt.Errorf("malformed HTTP status line %q", clip(string(line)))
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 || (len(line) > 12 && line[12] != ' ') {
			return h1Response{}, false, fmt.Errorf("malformed HTTP status line %q", clip(string(line)))
		}
		keep := line[7] == '1' // HTTP/1.1 keeps the connection by default
		length := int64(-1)
		chunked := false
		var header http.Header
		for {
			hl, err := br.ReadSlice('\n')
			if err != nil {
				if errors.Is(err, bufio.ErrBufferFull) {
					return h1Response{}, false, errors.New("reading the response: a header line is too long")
				}
				return h1Response{}, false, fmt.Errorf("reading the response: %w", unexpectedEOF(err))
			}
			hl = trimCRLF(hl)
			if len(hl) == 0 {
				break
			}
			colon := bytes.IndexByte(hl, ':')
			if colon <= 0 {
				return h1Response{}, false, fmt.Errorf("malformed HTTP header %q", clip(string(hl)))
			}
			key, val := hl[:colon], bytes.TrimSpace(hl[colon+1:])
			switch {
			case asciiEqualFold(key, "content-length"):
				n, err := strconv.ParseInt(string(val), 10, 64)
				if err != nil || n < 0 || (length >= 0 && n != length) {
					return h1Response{}, false, fmt.Errorf("bad Content-Length %q", clip(string(val)))
				}
				length = n
			case asciiEqualFold(key, "transfer-encoding"):
				if !asciiEqualFold(val, "chunked") {
					return h1Response{}, false, fmt.Errorf("unsupported Transfer-Encoding %q", clip(string(val)))
				}
				chunked = true
			case asciiEqualFold(key, "connection"):
				switch {
				case asciiEqualFold(val, "close"):
					keep = false
				case asciiEqualFold(val, "keep-alive"):
					keep = true
				}
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
		resp := h1Response{status: status, header: header}
		if method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified || status < 200 {
			return resp, keep && status >= 200, nil
		}
		resp.body = getBody(0)
		switch {
		case chunked:
			err = readAll(&resp.body.b, httputil.NewChunkedReader(br))
			if err == nil {
				err = skipTrailer(br)
			}
		case length >= 0:
			if length > maxResponseBytes {
				resp.release()
				return h1Response{}, false, fmt.Errorf("reading the response: the body is %d bytes, more than %d", length, maxResponseBytes)
			}
			b := resp.body.b
			if int64(cap(b)) < length {
				b = make([]byte, length)
			}
			b = b[:length]
			_, err = io.ReadFull(br, b)
			resp.body.b = b
		default:
			keep = false // the body ends when the server closes
			err = readAll(&resp.body.b, br)
		}
		if err != nil {
			resp.release()
			return h1Response{}, false, fmt.Errorf("reading the response: %w", unexpectedEOF(err))
		}
		return resp, keep, nil
	}
}

// readAll appends r to *b, up to maxResponseBytes.
func readAll(b *[]byte, r io.Reader) error {
	buf := (*b)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxResponseBytes {
			*b = buf
			return fmt.Errorf("the body is more than %d bytes", maxResponseBytes)
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
