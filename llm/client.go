package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/internal/h1"
	"go.uber.org/zap"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultMaxConcurrentPerEndpoint = 256
	DefaultRequestTimeout           = 120 * time.Second
	DefaultDownAfter                = 3
	DefaultDownFor                  = 10 * time.Second
)

// DefaultRetry is the policy client's retry policy for zero Options.Retry
// fields: a local inference server restarts in seconds, so retries come
// sooner and more often than the chat client's (retry.Default), and a
// Retry-After is honoured up to a minute.
var DefaultRetry = retry.Policy{MaxRetries: 8, BackoffBase: 200 * time.Millisecond, BackoffMax: 20 * time.Second, AfterMax: time.Minute}

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("llm: client is closed")

// Options configures a Client. Zero values take the defaults above.
type Options struct {
	// Endpoints are the base URLs of the inference servers, such as
	// "http://10.0.0.5:8000". A trailing "/" or "/v1" is removed: parley
	// adds the paths itself (/v1/completions, /tokenize, /health, ...).
	Endpoints []string
	// APIKey, when set, is sent as "Authorization: Bearer <key>" (vLLM's
	// --api-key). It is never logged.
	APIKey string
	// MaxConcurrentPerEndpoint caps the requests in flight to one endpoint
	// (completions and tokenizations); further requests wait for a slot.
	MaxConcurrentPerEndpoint int
	// RequestTimeout bounds one attempt (connect, send, wait, read). An
	// attempt that runs past it counts as a hang and is retried.
	RequestTimeout time.Duration
	// Retry is the retry policy: how many retries after the first attempt
	// (negative: none), the full-jitter backoff between attempts, and the
	// cap on a server's Retry-After. Zero fields take DefaultRetry's.
	Retry retry.Policy
	// HealthInterval, when positive, runs GET /health on every endpoint at
	// that interval in the background; failing endpoints are taken out of
	// rotation until a check passes. Zero disables background checks.
	HealthInterval time.Duration
	// DownAfter is the number of consecutive transport errors (refused or
	// dropped connections, hangs) after which an endpoint is taken out of
	// rotation for DownFor. Defaults: 3 and 10s.
	DownAfter int
	DownFor   time.Duration
	// HTTPClient replaces the client's own HTTP client. It should have no
	// overall Timeout (attempts carry their own) and a transport sized for
	// thousands of concurrent requests.
	HTTPClient *http.Client
	// Logger receives retry, endpoint-state and LoRA events; nil means none.
	Logger *zap.Logger
	// JitterSeed seeds the backoff jitter; zero seeds from the clock.
	JitterSeed int64
	// SessionHeader names the header that carries a completion's session
	// id (see WithSession), for a router in front of vLLM that routes by
	// it; empty sends none. parley's config defaults it to
	// DefaultSessionHeader.
	SessionHeader string
	// Resolver resolves the names of "dns+" endpoints (nil:
	// net.DefaultResolver). An endpoint "dns+http://NAME:PORT" stands for
	// every address NAME resolves to (a Kubernetes headless Service's
	// replicas); New fails when it resolves to none.
	Resolver Resolver
	// ResolveInterval is how often dns+ names are resolved again, adding
	// the replicas that appeared and retiring those gone, and lost
	// endpoints (Client.Lost) are asked to come back (zero:
	// DefaultResolveInterval).
	ResolveInterval time.Duration
	// SessionBound is ε of the load bound past which a session leaves its
	// endpoint: more than ceil((1+ε)·(T+1)/n) outstanding requests, T the
	// total on the n endpoints in rotation. Zero is DefaultSessionBound;
	// negative disables affinity (every completion goes to the
	// least-loaded endpoint).
	SessionBound float64
}

// Client is parley's client for one policy served by one or more
// OpenAI-compatible (vLLM) inference endpoints. It routes a session's
// completions (WithSession) to one endpoint while it is within the load
// bound, balances other requests by outstanding requests, follows dns+
// endpoints' names, and retries transient failures. It is safe for
// concurrent use.
type Client struct {
	opts      Options
	hc        *http.Client
	transport *http.Transport // owned transport, nil when Options.HTTPClient was given
	log       *zap.Logger
	auth      string
	// set is the endpoints in use now: those given, and the addresses
	// their dns+ names resolve to (see discover.go). It is replaced, never
	// changed in place.
	set         atomic.Pointer[[]*endpoint]
	disc        *discovery // dns+ endpoints, lost endpoints, the adapters loaded
	maxAttempts int

	rr    atomic.Uint64
	rngMu sync.Mutex
	rng   *rand.Rand
	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	route  route
	stats  counters
	closed atomic.Bool
	// starting quiets the rotation messages while a server the caller
	// started comes up (SetStarting).
	starting atomic.Bool
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// endpoint is one inference server and its balancing state.
type endpoint struct {
	name        string // base URL with any password redacted, for messages
	base        string // base URL without a trailing slash
	slots       chan struct{}
	outstanding atomic.Int64 // picked and not yet finished, waiting included
	occ         occupancy    // requests holding a slot, integrated over time
	downUntil   atomic.Int64 // unix nanoseconds; out of rotation before then
	consecErrs  atomic.Int32 // consecutive transport errors
	attempts    atomic.Int64
	completions atomic.Int64 // completion attempts
	// sessionHeaders counts completion attempts that carried the session header.
	sessionHeaders atomic.Int64
	transport      atomic.Int64 // transport errors
	answered       atomic.Bool  // it has answered at least once (any status)
	refusing       atomic.Bool  // its last attempt was refused and it has never answered
	homed          int          // sessions homed on it, guarded by Client.route.mu
	retired        atomic.Bool  // its dns+ name no longer resolves to it, or it is lost: out for good
	// h1 is the client's own HTTP/1.1 exchange with it; nil: net/http.
	h1 *h1.Client
}

func (e *endpoint) isDown(now int64) bool { return e.downUntil.Load() > now || e.retired.Load() }

// New validates opts, applies defaults and returns a Client. It fails when
// there is no endpoint or an endpoint is not an http(s) URL; the error names
// the endpoint.
func New(opts Options) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("llm.New: no endpoints given")
	}
	if opts.MaxConcurrentPerEndpoint <= 0 {
		opts.MaxConcurrentPerEndpoint = DefaultMaxConcurrentPerEndpoint
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	opts.Retry = opts.Retry.WithDefaults(DefaultRetry)
	if opts.DownAfter <= 0 {
		opts.DownAfter = DefaultDownAfter
	}
	if opts.DownFor <= 0 {
		opts.DownFor = DefaultDownFor
	}
	if opts.SessionBound == 0 {
		opts.SessionBound = DefaultSessionBound
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Client{
		opts:        opts,
		log:         log,
		maxAttempts: opts.Retry.Attempts(),
		sleep:       retry.Sleep,
	}
	if opts.APIKey != "" {
		c.auth = "Bearer " + opts.APIKey
	}
	seen := make(map[string]bool, len(opts.Endpoints))
	var eps []*endpoint
	var sources []dnsSource
	for _, raw := range opts.Endpoints {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(raw), dnsPrefix); ok {
			src, err := parseDNSSource(rest)
			if err != nil {
				return nil, fmt.Errorf("llm.New: endpoint %q: %w", raw, err)
			}
			sources = append(sources, src)
			continue
		}
		base, name, err := normalizeEndpoint(raw)
		if err != nil {
			return nil, fmt.Errorf("llm.New: endpoint %q: %w", raw, err)
		}
		if seen[base] {
			return nil, fmt.Errorf("llm.New: endpoint %q is listed twice", name)
		}
		seen[base] = true
		eps = append(eps, c.newEndpoint(base, name))
	}
	c.disc = newDiscovery(opts, sources, eps)
	if len(sources) > 0 {
		found, _, err := c.disc.resolveAll(context.Background())
		if err != nil {
			return nil, fmt.Errorf("llm.New: %w", err)
		}
		for _, f := range found {
			if !seen[f.base] {
				seen[f.base] = true
				ep := c.newEndpoint(f.base, f.name)
				c.disc.origin[ep], c.disc.ever[ep] = f.src, struct{}{}
				eps = append(eps, ep)
			}
		}
	}
	c.set.Store(&eps)
	seed := opts.JitterSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	c.rng = rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	if opts.HTTPClient != nil {
		c.hc = opts.HTTPClient
	} else {
		c.transport = newTransport()
		c.hc = &http.Client{Transport: c.transport}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	if opts.HealthInterval > 0 {
		c.every(ctx, opts.HealthInterval, func() {
			if err := c.Health(ctx); err != nil && ctx.Err() == nil {
				c.log.Debug("llm: background health check", zap.Error(err))
			}
		})
	}
	c.every(ctx, c.disc.interval, func() { c.Rediscover(ctx) })
	return c, nil
}

// every runs fn each interval in the background until ctx ends (Close
// waits for it): the health checks and the re-resolution of dns+
// endpoints.
func (c *Client) every(ctx context.Context, interval time.Duration, fn func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// newEndpoint returns the endpoint at base (name its printable form).
func (c *Client) newEndpoint(base, name string) *endpoint {
	ep := &endpoint{name: name, base: base, slots: make(chan struct{}, c.opts.MaxConcurrentPerEndpoint)}
	if c.opts.HTTPClient == nil {
		ep.h1 = h1.New(ep.base, c.auth, maxResponseBytes)
	}
	return ep
}

// endpoints returns the endpoints in use now.
func (c *Client) endpoints() []*endpoint { return *c.set.Load() }

// transportBufferSize is the size of each connection's read and write
// buffers. 16 KiB holds a whole turn's request or response in one system
// call as often as 64 KiB did (measured: 2.05 reads and 1.0 writes per
// request on the rollout benchmarks either way; 4 KiB costs 2.65 reads) at
// a quarter of the memory: 32 KiB per connection, 160 MB for 5,000
// connections instead of 640 MB.
const transportBufferSize = 16 << 10

// newTransport returns the one transport a Client shares across all its
// endpoints and requests: many idle connections kept per host, no cap on
// connections, no compression (token-id bodies are served uncompressed).
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        0, // no global cap
		MaxIdleConnsPerHost: 2048,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     transportBufferSize,
		ReadBufferSize:      transportBufferSize,
	}
}

// normalizeEndpoint checks an endpoint URL and returns its base (no
// trailing slash, no trailing /v1) and a printable name.
func normalizeEndpoint(raw string) (base, name string, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", "", errors.New("no host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", errors.New("a base URL takes no query or fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	u.RawPath = ""
	return u.String(), u.Redacted(), nil
}

// Close stops background health checks and closes idle connections. Calls
// made afterwards fail with ErrClosed. It is safe to call more than once.
func (c *Client) Close() {
	if c.closed.Swap(true) {
		return
	}
	c.stop()
	c.wg.Wait()
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
	for _, ep := range c.disc.everEndpoints(c.endpoints()) {
		if ep.h1 != nil {
			ep.h1.Close()
		}
	}
}

// Endpoints returns the printable base URLs of the endpoints in use, in
// the order given (a dns+ name's addresses after the endpoints listed).
func (c *Client) Endpoints() []string {
	eps := c.endpoints()
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = ep.name
	}
	return out
}

// pick returns the endpoint with the fewest outstanding requests among the
// endpoints in rotation, preferring one other than avoid; ties go
// round-robin. When every endpoint is down it picks among all of them.
func (c *Client) pick(avoid *endpoint) *endpoint {
	eps := c.endpoints()
	if len(eps) == 1 {
		return eps[0]
	}
	now := time.Now().UnixNano()
	for pass := 0; pass < 3; pass++ {
		// pass 0: up and not avoid; pass 1: up; pass 2: any.
		eligible := func(ep *endpoint) bool {
			return (pass == 2 || !ep.isDown(now)) && (pass > 0 || ep != avoid)
		}
		var least int64
		ties := 0
		for _, ep := range eps {
			if !eligible(ep) {
				continue
			}
			if l := ep.outstanding.Load(); ties == 0 || l < least {
				least, ties = l, 1
			} else if l == least {
				ties++
			}
		}
		if ties == 0 {
			continue
		}
		k := int(c.rr.Add(1) % uint64(ties))
		var fallback *endpoint
		for _, ep := range eps {
			if !eligible(ep) {
				continue
			}
			l := ep.outstanding.Load()
			if l <= least {
				if k == 0 {
					return ep
				}
				k--
			}
			if fallback == nil || l < fallback.outstanding.Load() {
				fallback = ep
			}
		}
		return fallback // loads moved under us; any least-loaded one will do
	}
	return eps[0] // unreachable: pass 2 accepts every endpoint
}

// SetStarting tells the client that its servers are starting (on: a
// server the caller started and now waits for) or started (off). While
// they start, an endpoint taken out of rotation or put back is logged at
// debug, not as a warning whose hint is to start the server: the caller
// reports a server that never comes up itself.
func (c *Client) SetStarting(on bool) { c.starting.Store(on) }

// markDown takes ep out of rotation until until (unix nanoseconds), logging
// the transition (at debug while the servers start: SetStarting).
func (c *Client) markDown(ep *endpoint, until int64, why string, cause error) {
	prev := ep.downUntil.Swap(until)
	if prev <= time.Now().UnixNano() {
		level := zap.WarnLevel
		if c.starting.Load() {
			level = zap.DebugLevel
		}
		c.log.Log(level, "llm: endpoint taken out of rotation",
			zap.String("endpoint", ep.name), zap.String("why", why),
			zap.Time("until", time.Unix(0, until)), zap.Error(cause))
	}
}

// markUp puts ep back in rotation.
func (c *Client) markUp(ep *endpoint) {
	ep.consecErrs.Store(0)
	if prev := ep.downUntil.Swap(0); prev > time.Now().UnixNano() {
		level := zap.InfoLevel
		if c.starting.Load() {
			level = zap.DebugLevel
		}
		c.log.Log(level, "llm: endpoint back in rotation", zap.String("endpoint", ep.name))
	}
}
