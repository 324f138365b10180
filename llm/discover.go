package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// dnsPrefix marks an endpoint whose host name stands for every address it
// resolves to: "dns+http://vllm.ns.svc.cluster.local:8000" is each replica
// behind a Kubernetes headless Service.
const dnsPrefix = "dns+"

// DefaultResolveInterval is how often dns+ endpoints are resolved again
// when Options.ResolveInterval is zero.
const DefaultResolveInterval = 30 * time.Second

// resolveTimeout bounds one resolution of one name.
const resolveTimeout = 10 * time.Second

// Resolver resolves a host name to its addresses (*net.Resolver; tests
// give a fixed table, so that no DNS server is needed).
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// dnsSource is one dns+ endpoint: the URL around the name.
type dnsSource struct {
	raw                      string // as given, for messages
	scheme, host, port, path string
}

// parseDNSSource reads the URL after "dns+".
func parseDNSSource(rest string) (dnsSource, error) {
	u, err := url.Parse(rest)
	if err != nil {
		return dnsSource{}, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return dnsSource{}, fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return dnsSource{}, errors.New("no host name to resolve")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return dnsSource{}, errors.New("a dns+ base URL takes no credentials, query or fragment")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	path := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	return dnsSource{raw: dnsPrefix + rest, scheme: u.Scheme, host: u.Hostname(), port: port, path: path}, nil
}

// base is the endpoint URL of one address of s.
func (s dnsSource) base(addr string) string {
	return s.scheme + "://" + net.JoinHostPort(addr, s.port) + s.path
}

// discovery keeps a Client's dns+ endpoints (what each name resolved to),
// its lost endpoints and the LoRA adapters every endpoint has loaded, so
// that a replica that appears, or a lost endpoint that returns, gets them
// before it gets traffic.
type discovery struct {
	res      Resolver
	interval time.Duration
	sources  []dnsSource
	// mu serialises changes of the endpoint set with LoadLoRA and
	// UnloadLoRA, so a replica added meanwhile misses no adapter.
	mu       sync.Mutex
	adapters map[string]string      // name → path, loaded on every endpoint
	origin   map[*endpoint]int      // a discovered endpoint → its source
	ever     map[*endpoint]struct{} // every endpoint discovered or lost, for Close
	// lost are the endpoints an adapter load or unload could not reach
	// while others answered (loseUnreachable), out of the set until they
	// answer again.
	lost []discovered
	// lostNames are lost's names, for Lost without mu (a load holds mu
	// through its retries).
	lostNames atomic.Pointer[[]string]
}

// setLost replaces the lost endpoints. The caller holds mu.
func (d *discovery) setLost(lost []discovered) {
	d.lost = lost
	names := make([]string, len(lost))
	for i, l := range lost {
		names[i] = l.name
	}
	d.lostNames.Store(&names)
}

func newDiscovery(opts Options, sources []dnsSource, static []*endpoint) *discovery {
	res := opts.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	interval := opts.ResolveInterval
	if interval <= 0 {
		interval = DefaultResolveInterval
	}
	return &discovery{res: res, interval: interval, sources: sources, adapters: map[string]string{},
		origin: map[*endpoint]int{}, ever: map[*endpoint]struct{}{}}
}

// discovered is one address a source resolved to.
type discovered struct {
	base, name string
	src        int
}

// resolveAll resolves every source. A source that resolves to nothing (an
// error, or no address) is an error naming it; the others' addresses are
// returned with failed[i] set for each failed source i.
func (d *discovery) resolveAll(ctx context.Context) (found []discovered, failed []bool, err error) {
	failed = make([]bool, len(d.sources))
	var errs []error
	for i, s := range d.sources {
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		addrs, lerr := d.res.LookupHost(rctx, s.host)
		cancel()
		if lerr == nil && len(addrs) == 0 {
			lerr = errors.New("no addresses")
		}
		if lerr != nil {
			failed[i] = true
			errs = append(errs, fmt.Errorf("endpoint %q: the name %s resolves to no address (%w): a headless Service with no ready replica, or a wrong name", s.raw, s.host, lerr))
			continue
		}
		slices.Sort(addrs)
		for _, a := range addrs {
			b := s.base(a)
			found = append(found, discovered{base: b, name: b, src: i})
		}
	}
	return found, failed, errors.Join(errs...)
}

// Rediscover resolves the dns+ endpoints again now, and asks the lost
// endpoints to come back (the client does so every ResolveInterval): an
// address that appeared, or a lost endpoint, is put in rotation once it
// passes GET /health and has every LoRA adapter the client loaded; an
// address that went away is retired (its requests in flight finish, its
// sessions move). A name that resolves to nothing keeps its endpoints, with
// a warning: a DNS outage does not empty the pool.
func (c *Client) Rediscover(ctx context.Context) {
	d := c.disc
	found, failed, err := d.resolveAll(ctx)
	if err != nil {
		c.log.Warn("llm: resolving endpoints; keeping the ones resolved before", zap.Error(err))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	wanted := map[string]bool{}
	for _, f := range found {
		wanted[f.base] = true
	}
	// A lost endpoint that its name no longer resolves to is gone.
	d.setLost(slices.DeleteFunc(slices.Clone(d.lost), func(l discovered) bool { return l.src >= 0 && !failed[l.src] && !wanted[l.base] }))
	back := c.takeBack(ctx)
	cur := append(slices.Clone(c.endpoints()), back...)
	have := map[string]bool{}
	var next []*endpoint
	for _, ep := range cur {
		src, discoveredEp := d.origin[ep]
		if !discoveredEp || failed[src] || wanted[ep.base] {
			next = append(next, ep)
			have[ep.base] = true
			continue
		}
		ep.retired.Store(true)
		c.log.Info("llm: endpoint retired: its name no longer resolves to it", zap.String("endpoint", ep.name), zap.String("name", d.sources[src].raw))
	}
	for _, f := range found {
		if have[f.base] {
			continue
		}
		have[f.base] = true
		ep := c.newEndpoint(f.base, f.name)
		if err := c.admit(ctx, ep); err != nil {
			c.log.Warn("llm: new endpoint not put in rotation yet", zap.String("endpoint", ep.name), zap.Error(err))
			if ep.h1 != nil {
				ep.h1.Close()
			}
			continue
		}
		d.origin[ep] = f.src
		d.ever[ep] = struct{}{}
		next = append(next, ep)
		c.log.Info("llm: endpoint added", zap.String("endpoint", ep.name), zap.String("name", d.sources[f.src].raw))
	}
	c.set.Store(&next)
}

// takeBack admits every lost endpoint that answers again and returns
// them (new endpoints: the lost ones stay retired). The caller holds
// disc.mu.
func (c *Client) takeBack(ctx context.Context) []*endpoint {
	d := c.disc
	var back []*endpoint
	var still []discovered
	for _, l := range d.lost {
		ep := c.newEndpoint(l.base, l.name)
		if err := c.admit(ctx, ep); err != nil {
			c.log.Debug("llm: lost endpoint not back yet", zap.String("endpoint", ep.name), zap.Error(err))
			if ep.h1 != nil {
				ep.h1.Close()
			}
			still = append(still, l)
			continue
		}
		d.ever[ep] = struct{}{}
		if l.src >= 0 {
			d.origin[ep] = l.src
		}
		back = append(back, ep)
		c.log.Warn("llm: lost endpoint back in rotation, with every adapter loaded", zap.String("endpoint", ep.name))
	}
	d.setLost(still)
	return back
}

// loseUnreachable goes on without the endpoints of eps that errs (a call
// on each) says could not be reached (no answer: refused, reset, timed
// out), when at least one succeeded: it takes them out of the endpoint set
// with a warning, lists them in Lost (the step metric
// policy/endpoints_lost) and returns errs without their errors. Rediscover
// takes each back once it answers and has loaded every adapter. An
// endpoint that answered with an error is not lost. The caller holds
// disc.mu.
func (c *Client) loseUnreachable(ctx context.Context, op string, eps []*endpoint, errs []error) []error {
	var gone []*endpoint
	ok := 0
	for i, err := range errs {
		var apiErr *APIError
		switch {
		case err == nil:
			ok++
		case !errors.As(err, &apiErr):
			gone = append(gone, eps[i])
		}
	}
	if ok == 0 || len(gone) == 0 || ctx.Err() != nil {
		return errs
	}
	d := c.disc
	out := slices.Clone(errs)
	for i, ep := range eps {
		if slices.Contains(gone, ep) {
			c.log.Warn("llm: endpoint lost: "+op+" could not reach it; going on with the endpoints that answer, and taking it back with every adapter once it answers again",
				zap.String("endpoint", ep.name), zap.Error(errs[i]))
			out[i] = nil
		}
	}
	next := slices.DeleteFunc(slices.Clone(c.endpoints()), func(ep *endpoint) bool { return slices.Contains(gone, ep) })
	lost := slices.Clone(d.lost)
	for _, ep := range gone {
		ep.retired.Store(true)
		d.ever[ep] = struct{}{}
		src, discoveredEp := d.origin[ep]
		if !discoveredEp {
			src = -1 // listed in policy.endpoints
		}
		lost = append(lost, discovered{base: ep.base, name: ep.name, src: src})
	}
	d.setLost(lost)
	c.set.Store(&next)
	return out
}

// Lost returns the endpoints lost now (loseUnreachable): out of rotation
// until they answer again.
func (c *Client) Lost() []string {
	if p := c.disc.lostNames.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// admit readies a discovered endpoint: it must answer GET /health and load
// every adapter the client has loaded. The caller holds disc.mu.
func (c *Client) admit(ctx context.Context, ep *endpoint) error {
	if err := c.checkHealth(ctx, ep); err != nil {
		return err
	}
	names := make([]string, 0, len(c.disc.adapters))
	for n := range c.disc.adapters {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := c.loadOn(ctx, ep, n, c.disc.adapters[n]); err != nil {
			return fmt.Errorf("load adapter %s: %w", n, err)
		}
	}
	return nil
}

// trackAdapters runs a LoRA change (fn) with the endpoint set held still,
// recording the change when it succeeded.
func (c *Client) trackAdapters(name, path string, fn func() error) error {
	c.disc.mu.Lock()
	defer c.disc.mu.Unlock()
	err := fn()
	if err == nil {
		if path != "" {
			c.disc.adapters[name] = path
		} else {
			delete(c.disc.adapters, name)
		}
	}
	return err
}

// everEndpoints returns eps and every endpoint discovered since, for Close.
func (d *discovery) everEndpoints(eps []*endpoint) []*endpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(eps)
	for ep := range d.ever {
		if !slices.Contains(out, ep) {
			out = append(out, ep)
		}
	}
	return out
}

var _ Resolver = (*net.Resolver)(nil)
