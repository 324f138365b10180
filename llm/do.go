package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/retry"
	"go.uber.org/zap"
)

// maxResponseBytes bounds a response body read into memory.
const maxResponseBytes = 256 << 20

// call describes one logical request: the retry loop runs it as one or more
// attempts.
type call struct {
	method, path string
	body         []byte
	// pooled, when set, is the pooled buffer body was written to (by
	// getBody): it goes back to the pool when the call and the transport
	// are done with it (see sharedBody).
	pooled *bodyBuf
	// pin sends every attempt to this endpoint instead of balancing.
	pin *endpoint
	// slot makes each attempt hold one of the endpoint's concurrency slots.
	slot bool
	// maxAttempts overrides the client's attempt budget when positive.
	maxAttempts int
	// timeout overrides RequestTimeout for each attempt when positive.
	timeout time.Duration
	// handle receives a 2xx body (valid only during the call); its error is
	// final and not retried. Nil ignores the body.
	handle func(body []byte) error
	// accept turns an error status into success (idempotent LoRA calls).
	accept func(*APIError) bool
	// classify recognises an error status whose cause no retry can cure
	// and returns the final error naming it (nil: the usual retry rules).
	classify func(*APIError) error
	// shared is the pooled body's reference count while do runs.
	shared *sharedBody
	// session routes the call as the session its context carries (see
	// WithSession) and sends the session header.
	session bool
	// header is the extra header lines of every attempt, each ending in
	// CRLF (the session header); set by do.
	header string
}

// bufPool holds response buffers.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuf = 4 << 20

func putBuf(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuf {
		return
	}
	b.Reset()
	bufPool.Put(b)
}

// bodyPool holds the buffers of the hot requests' bodies (completions and
// tokenizations: a prompt's token ids, a conversation), which would
// otherwise be a third of the client's allocation.
var bodyPool sync.Pool // of *bodyBuf

// bodyBuf is a pooled body buffer.
type bodyBuf struct{ b []byte }

// maxPooledBody bounds the capacity of a buffer kept in bodyPool.
const maxPooledBody = 1 << 20

// getBody returns a pooled buffer, empty, with room for at least n bytes.
func getBody(n int) *bodyBuf {
	p, _ := bodyPool.Get().(*bodyBuf)
	if p == nil {
		p = &bodyBuf{}
	}
	if cap(p.b) < n {
		p.b = make([]byte, 0, max(n, 2*cap(p.b)))
	}
	p.b = p.b[:0]
	return p
}

// sharedBody is a pooled request body shared by a call and its attempts.
// The transport writes an attempt's body in its own goroutine, and may
// still be doing so after the response has come back (an early answer, a
// timeout); the buffer goes back to the pool only when the call has ended
// and the transport has finished writing every attempt that it began to
// write (httptrace's WroteRequest): one reference for the call, one per
// attempt. An attempt the transport never reports on keeps its reference,
// and the buffer is left to the garbage collector.
//
// The body stays a *bytes.Reader: the transport writes a body it knows to
// be in memory together with the headers, in one system call (a reader of
// another type gets the headers flushed first: two).
type sharedBody struct {
	buf  *bodyBuf
	refs atomic.Int32
}

func (s *sharedBody) release() {
	if s.refs.Add(-1) == 0 && cap(s.buf.b) <= maxPooledBody {
		bodyPool.Put(s.buf)
	}
}

// traceWrite returns ctx with a trace that releases one reference of s
// when the transport has written the request (or failed to), once.
func (s *sharedBody) traceWrite(ctx context.Context) context.Context {
	s.refs.Add(1)
	var done atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		if !done.Swap(true) {
			s.release()
		}
	}})
}

// do runs cl with retries and returns nil or an error ready to be wrapped
// with the caller's operation name.
func (c *Client) do(ctx context.Context, cl *call) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if cl.pooled != nil {
		shared := &sharedBody{buf: cl.pooled}
		shared.refs.Store(1)
		cl.shared = shared
		defer shared.release()
	}
	c.stats.requests.Add(1)
	maxAttempts := c.maxAttempts
	if cl.maxAttempts > 0 {
		maxAttempts = cl.maxAttempts
	}
	var last *endpoint
	var lastErr error
	sess, affine := Session{}, false
	if cl.session {
		if sess, affine = SessionFrom(ctx); affine {
			cl.header = c.sessionHeader(sess.ID)
			affine = c.opts.SessionBound >= 0 && (len(c.disc.sources) > 0 || len(c.endpoints()) > 1)
		}
	}
	for attempt := 1; ; attempt++ {
		ep := cl.pin
		switch {
		case ep != nil:
		case affine:
			ep = c.pickSession(sess, last)
		default:
			ep = c.pick(last)
		}
		retryAfter, again, err := c.attempt(ctx, ep, cl)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			c.stats.failures.Add(1)
			if lastErr != nil {
				return fmt.Errorf("%w (after %d attempts; last error: %v)", cerr, attempt, lastErr)
			}
			return cerr
		}
		if !again {
			c.stats.failures.Add(1)
			if attempt > 1 {
				return fmt.Errorf("failed on attempt %d: %w", attempt, err)
			}
			return err
		}
		last, lastErr = ep, err
		if attempt >= maxAttempts {
			c.stats.failures.Add(1)
			if attempt == 1 {
				return err
			}
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		wait := c.backoff(attempt, retryAfter)
		c.stats.retries.Add(1)
		c.log.Debug("llm: retrying",
			zap.String("path", cl.path), zap.String("endpoint", ep.name),
			zap.Int("attempt", attempt), zap.Duration("wait", wait), zap.Error(err))
		if serr := c.sleep(ctx, wait); serr != nil {
			c.stats.failures.Add(1)
			return fmt.Errorf("%w (after %d attempts; last error: %v)", serr, attempt, lastErr)
		}
	}
}

// backoff returns the wait after the n-th failed attempt (1-based): the
// server's Retry-After (after >= 0), capped at the policy's AfterMax, or
// else the full-jitter backoff. The mutex serialises the shared rng.
func (c *Client) backoff(n int, after time.Duration) time.Duration {
	if after >= 0 {
		return min(after, c.opts.Retry.AfterMax)
	}
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.opts.Retry.Wait(n, 0, c.rng)
}

// attempt makes one HTTP exchange with ep. It returns the server's
// Retry-After (negative when absent), whether the failure is worth a retry,
// and the error.
func (c *Client) attempt(ctx context.Context, ep *endpoint, cl *call) (time.Duration, bool, error) {
	ep.outstanding.Add(1)
	defer ep.outstanding.Add(-1)
	if cl.slot {
		select {
		case ep.slots <- struct{}{}:
		case <-ctx.Done():
			return -1, false, ctx.Err()
		}
		target := cap(ep.slots)
		ep.occ.change(1, target, time.Now().UnixNano())
		defer func() {
			ep.occ.change(-1, target, time.Now().UnixNano())
			<-ep.slots
		}()
	}
	timeout := c.opts.RequestTimeout
	if cl.timeout > 0 {
		timeout = cl.timeout
	}
	c.stats.attempts.Add(1)
	ep.attempts.Add(1)
	if cl.session {
		ep.completions.Add(1)
		if cl.header != "" {
			ep.sessionHeaders.Add(1)
		}
	}
	var ans answer
	var timedOut bool
	var err error
	if ep.h1 != nil {
		ans, timedOut, err = c.exchangeH1(ctx, ep, cl, timeout)
	} else {
		ans, timedOut, err = c.exchangeHTTP(ctx, ep, cl, timeout)
	}
	if err != nil {
		return c.transportFailure(ctx, timedOut, ep, cl, timeout, err)
	}
	defer ans.release()
	if ep.consecErrs.Load() != 0 {
		ep.consecErrs.Store(0)
	}
	if !ep.answered.Load() {
		ep.answered.Store(true)
	}
	if ep.refusing.Load() {
		ep.refusing.Store(false)
	}
	c.stats.countStatus(ans.status)
	if ans.status >= 200 && ans.status < 300 {
		if cl.handle == nil {
			return -1, false, nil
		}
		if err := cl.handle(ans.body); err != nil {
			return -1, false, fmt.Errorf("response from %s: %w", ep.name, err)
		}
		return -1, false, nil
	}
	apiErr := parseAPIError(ep.name, cl.path, ans.status, ans.body)
	if cl.accept != nil && cl.accept(apiErr) {
		return -1, false, nil
	}
	if dead := engineDead(apiErr); dead != nil {
		// A dead engine answers every request with this 500 until it is
		// restarted: take the endpoint out of rotation and retry only on
		// another endpoint, if there is one.
		c.markDown(ep, time.Now().Add(c.opts.DownFor).UnixNano(), "engine dead", dead)
		return -1, cl.pin == nil && c.anotherUp(ep), dead
	}
	if cl.classify != nil {
		if err := cl.classify(apiErr); err != nil {
			return -1, false, err
		}
	}
	again := ans.status == http.StatusTooManyRequests || ans.status >= 500
	retryAfter := time.Duration(-1)
	if again && ans.header != nil {
		if d, ok := retry.After(ans.header, time.Now()); ok {
			retryAfter = d
		}
	}
	return retryAfter, again, apiErr
}

// answer is a complete response: its status, headers (the Retry-After
// ones at least; nil when there are none), and body, valid until release.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	release func()
}

// exchangeH1 makes one exchange with the client's own HTTP/1.1 code (see
// package h1). timedOut says whether an error is the attempt's timeout.
func (c *Client) exchangeH1(ctx context.Context, ep *endpoint, cl *call, timeout time.Duration) (answer, bool, error) {
	resp, err := ep.h1.Do(ctx, time.Now().Add(timeout), cl.method, cl.path, cl.header, cl.body)
	if err != nil {
		return answer{}, ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded), err
	}
	return answer{status: resp.Status, header: resp.Header, body: resp.Body, release: resp.Release}, false, nil
}

// exchangeHTTP makes one exchange through net/http. timedOut says whether
// an error is the attempt's timeout.
func (c *Client) exchangeHTTP(ctx context.Context, ep *endpoint, cl *call, timeout time.Duration) (answer, bool, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	rctx := actx
	if cl.shared != nil {
		rctx = cl.shared.traceWrite(actx)
	}
	req, err := http.NewRequestWithContext(rctx, cl.method, ep.base+cl.path, body)
	if err != nil {
		return answer{}, false, err
	}
	if cl.body != nil {
		req.Header["Content-Type"] = jsonContentType
	}
	if c.auth != "" {
		req.Header["Authorization"] = []string{c.auth}
	}
	if cl.header != "" {
		req.Header[http.CanonicalHeaderKey(c.opts.SessionHeader)] = []string{sessionValue(cl.header)}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, errors.Is(actx.Err(), context.DeadlineExceeded), err
	}
	buf := bufPool.Get().(*bytes.Buffer)
	if n := resp.ContentLength; n > 0 && n <= maxResponseBytes {
		buf.Grow(int(n))
	}
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	if err != nil {
		putBuf(buf)
		return answer{}, errors.Is(actx.Err(), context.DeadlineExceeded), fmt.Errorf("reading the response: %w", err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: buf.Bytes(), release: func() { putBuf(buf) }}, false, nil
}

var jsonContentType = []string{"application/json"}

// transportFailure classifies a failed exchange: the caller's context ends
// the call; anything else (refused, reset, EOF, attempt timeout) is retried
// and counts toward taking the endpoint out of rotation.
func (c *Client) transportFailure(ctx context.Context, timedOut bool, ep *endpoint, cl *call, timeout time.Duration, err error) (time.Duration, bool, error) {
	if ctx.Err() != nil {
		return -1, false, ctx.Err()
	}
	c.stats.transport.Add(1)
	ep.transport.Add(1)
	again := true
	switch {
	case timedOut:
		c.stats.timeouts.Add(1)
		err = fmt.Errorf("%s %s on %s: no complete response within %v (attempt timeout; server hung or overloaded): %w",
			cl.method, cl.path, ep.name, timeout, err)
	case errors.Is(err, syscall.ECONNREFUSED) && !ep.answered.Load():
		// Nothing has ever listened there: a server that is not running
		// (or a wrong port), not one restarting. Say so now rather than
		// after the whole retry budget, unless another endpoint may answer.
		ep.refusing.Store(true)
		err = &CauseError{Cause: ErrNotRunning, Err: fmt.Errorf("%s %s on %s: %w", cl.method, cl.path, ep.name, err), Fix: fixNotRunning}
		again = cl.pin == nil && c.anotherNotRefusing(ep)
	default:
		err = fmt.Errorf("%s %s on %s: %w", cl.method, cl.path, ep.name, err)
	}
	if n := ep.consecErrs.Add(1); int(n) >= c.opts.DownAfter {
		c.markDown(ep, time.Now().Add(c.opts.DownFor).UnixNano(),
			strconv.Itoa(int(n))+" consecutive transport errors", err)
	}
	return -1, again, err
}

// anotherUp reports whether an endpoint other than ep is in rotation.
func (c *Client) anotherUp(ep *endpoint) bool {
	now := time.Now().UnixNano()
	for _, e := range c.endpoints() {
		if e != ep && !e.isDown(now) {
			return true
		}
	}
	return false
}

// anotherNotRefusing reports whether an endpoint other than ep may answer:
// it has not refused connections without ever answering.
func (c *Client) anotherNotRefusing(ep *endpoint) bool {
	for _, e := range c.endpoints() {
		if e != ep && !e.refusing.Load() {
			return true
		}
	}
	return false
}
