package llm

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"
)

// DefaultSessionHeader is the header that carries a request's session id
// to a router in front of vLLM (vllm-router's session policies, llm-d).
const DefaultSessionHeader = "X-Session-ID"

// DefaultSessionBound is ε of the load bound a session moves past: its
// endpoint's outstanding requests above (1+ε) times the mean (see
// Options.SessionBound). 0.25 is the loosest bound that keeps every
// endpoint within 1.25× the mean load, the target; the benchmark
// (BenchmarkAffinity in package rollout) measured 0.1, 0.25 and 1.0.
const DefaultSessionBound = 0.25

// Session names a dialogue for routing: one agent's trajectory (a rollout
// and a role). The first completion of a session goes to the least-loaded
// endpoint and later ones to the same endpoint, whose prefix cache holds
// the dialogue so far; it moves only when that endpoint is down, failed
// the previous attempt, or is loaded past the bound (Options.SessionBound).
type Session struct {
	// ID identifies the session; it is also sent as the session header.
	ID string
	// Group names sessions whose first prompts are alike (a GRPO group,
	// which shares a prompt row): a session's first completion goes where
	// its group's first one went while that endpoint is within the bound.
	Group string
}

type sessionKey struct{}

// WithSession returns ctx carrying s: the completions made with it are
// routed as session s. An empty s.ID means no session.
func WithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom returns the session ctx carries, if any.
func SessionFrom(ctx context.Context) (Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(Session)
	return s, ok && s.ID != ""
}

// route is a Client's session table: where each live session and group is
// homed. One mutex guards it; a routing decision is a few map operations.
type route struct {
	mu       sync.Mutex
	sessions map[string]*homed
	groups   map[string]*groupHome
	// sweepAt is the table size at which idle sessions are swept.
	sweepAt int
	moves   int64 // sessions moved off their endpoint
	started int64 // sessions started
	// peak is the most sessions live at once lately (since peakAt, reset
	// after sessionIdle): the session bound is taken against it rather
	// than the sessions live now, so that the first turns of a step (few
	// live yet) may fill an endpoint with a group, and the last (few live
	// still) do not move.
	peak   int
	peakAt int64
}

// homed is one session's home.
type homed struct {
	ep    *endpoint
	group string
	used  int64 // unix nanoseconds of its last request
}

// groupHome is where a group's first session went, and how many of the
// group's sessions are live.
type groupHome struct {
	ep   *endpoint
	live int
}

// sessionIdle is how long a session that was never ended may stay unused
// before a sweep drops it (a runner that ends its sessions never needs it).
const sessionIdle = 30 * time.Minute

// minSweep is the table size below which no sweep runs.
const minSweep = 4096

// capacity is the bounded-load cap of Mirrokni, Thorup and Zadimoghaddam's
// consistent hashing with bounded loads: ceil((1+ε)·m/n) for m balls on n
// bins.
func capacity(m int64, n int, eps float64) int64 {
	return int64(math.Ceil((1 + eps) * float64(m) / float64(n)))
}

// pickSession returns the endpoint for an attempt of session s. A new
// session goes to its group's endpoint when that is within the bounds, or
// else to the least-loaded endpoint (place). A live session stays on its
// home unless the home is down, failed the previous attempt (avoid), or is
// past a bound:
//
//   - sessions: the home holds more than ceil((1+ε)·S/n), S the sessions
//     homed on the n endpoints in rotation or, when more, the most live
//     at once lately (an endpoint came back or was added: sessions drift
//     to it one request at a time);
//   - saturation: every concurrency slot of the home is taken, and its
//     outstanding requests are past ceil((1+ε)·(T+1)/n), T the total on
//     the endpoints in rotation (one replica queueing while others idle).
//
// Outstanding requests alone would be too noisy a bound: an agent's
// requests come one at a time, so at a few sessions per endpoint the
// count swings well past 1.25× its mean under an even load, and sessions
// would scatter (measured: TestSessionAffinity moved sessions with it).
// When every endpoint is saturated none is past the mean and requests wait
// for their own endpoint's slots. When every endpoint is down the attempt
// goes where pick sends it and the session keeps its home.
func (c *Client) pickSession(s Session, avoid *endpoint) *endpoint {
	eps := c.endpoints()
	now := time.Now().UnixNano()
	var total int64
	up := 0
	for _, ep := range eps {
		if !ep.isDown(now) {
			total += ep.outstanding.Load()
			up++
		}
	}
	if up == 0 {
		return c.pick(avoid)
	}
	r := &c.route
	r.mu.Lock()
	defer r.mu.Unlock()
	var homedUp int64
	for _, ep := range eps {
		if !ep.isDown(now) {
			homedUp += int64(ep.homed)
		}
	}
	if now-r.peakAt > int64(sessionIdle) {
		r.peak, r.peakAt = len(r.sessions), now
	}
	peak := int64(r.peak)
	slots := int64(c.opts.MaxConcurrentPerEndpoint)
	reqCap := capacity(total+1, up, c.opts.SessionBound)
	// fits reports whether ep may take the request of a session already
	// counted in its homed sessions (own) or not.
	fits := func(ep *endpoint, own bool) bool {
		if ep == nil || ep == avoid || ep.isDown(now) {
			return false
		}
		m, h := homedUp, int64(ep.homed)
		if !own {
			m, h = m+1, h+1
		}
		if h > capacity(max(m, peak), up, c.opts.SessionBound) {
			return false
		}
		o := ep.outstanding.Load()
		return o < slots || o+1 <= reqCap
	}
	h := r.sessions[s.ID]
	if h != nil {
		h.used = now
		if fits(h.ep, true) {
			return h.ep
		}
		if h.ep == avoid && up == 1 && !avoid.isDown(now) {
			return h.ep // the only endpoint in rotation: retry it
		}
	}
	var g *groupHome
	if s.Group != "" {
		g = r.groups[s.Group]
	}
	var ep *endpoint
	if h == nil && g != nil && fits(g.ep, false) {
		ep = g.ep
	} else {
		ep = c.place(eps, avoid, now, fits)
	}
	if h == nil {
		r.start(s, ep, now)
		if g == nil && s.Group != "" {
			r.groups[s.Group] = &groupHome{ep: ep, live: 1}
		} else if g != nil {
			g.live++
		}
		return ep
	}
	if ep != h.ep {
		r.moves++
		h.ep.homed--
		ep.homed++
		h.ep = ep
	}
	return ep
}

// start records a new session homed on ep, sweeping idle sessions when the
// table has grown.
func (r *route) start(s Session, ep *endpoint, now int64) {
	if r.sessions == nil {
		r.sessions = map[string]*homed{}
		r.groups = map[string]*groupHome{}
	}
	if len(r.sessions) >= max(r.sweepAt, minSweep) {
		for id, h := range r.sessions {
			if now-h.used > int64(sessionIdle) {
				r.end(id, h)
			}
		}
		r.sweepAt = 2 * len(r.sessions)
	}
	r.sessions[s.ID] = &homed{ep: ep, group: s.Group, used: now}
	ep.homed++
	r.started++
	if len(r.sessions) > r.peak {
		r.peak, r.peakAt = len(r.sessions), now
	}
}

// place returns the endpoint for a session's new home: among the
// endpoints that fit it (within both bounds, not avoid), or failing that
// those in rotation other than avoid, or any in rotation, the one with the
// fewest sessions homed and then the fewest outstanding requests; ties go
// round-robin. Sessions first: they are counted at once, where outstanding
// requests lag behind a burst of first turns and swing with each agent's
// turn (measured, BenchmarkAffinity at 8 endpoints: completions per
// endpoint 35 to 120 placing by outstanding requests first, 88 each by
// sessions). The caller holds c.route.mu and has checked that
// an endpoint is in rotation.
func (c *Client) place(eps []*endpoint, avoid *endpoint, now int64, fits func(*endpoint, bool) bool) *endpoint {
	better := func(a, b *endpoint) int { // <0: a is less loaded
		if a.homed != b.homed {
			return a.homed - b.homed
		}
		return int(a.outstanding.Load() - b.outstanding.Load())
	}
	var best []*endpoint
	for pass := 0; pass < 3 && len(best) == 0; pass++ {
		for _, ep := range eps {
			switch {
			case ep.isDown(now):
				continue
			case pass == 0 && !fits(ep, false), pass == 1 && ep == avoid:
				continue
			}
			switch {
			case len(best) == 0:
				best = append(best, ep)
			case better(ep, best[0]) < 0:
				best = append(best[:0], ep)
			case better(ep, best[0]) == 0:
				best = append(best, ep)
			}
		}
	}
	return best[int(c.rr.Add(1)%uint64(len(best)))]
}

// end drops session id (homed h) and its share of its group.
func (r *route) end(id string, h *homed) {
	delete(r.sessions, id)
	h.ep.homed--
	if g := r.groups[h.group]; g != nil {
		if g.live--; g.live <= 0 {
			delete(r.groups, h.group)
		}
	}
}

// EndSession releases session id: its next request, if any, starts it
// anew on the least-loaded endpoint. Runners end a rollout's sessions when
// the rollout ends; ending an unknown session does nothing.
func (c *Client) EndSession(id string) {
	r := &c.route
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.sessions[id]; h != nil {
		r.end(id, h)
	}
}

// SessionStats is a snapshot of the session table.
type SessionStats struct {
	Live    int   // sessions homed now
	Started int64 // sessions started
	Moves   int64 // sessions moved to another endpoint (down, failed, past the bound)
}

// Sessions returns a snapshot of the session table.
func (c *Client) Sessions() SessionStats {
	r := &c.route
	r.mu.Lock()
	defer r.mu.Unlock()
	return SessionStats{Live: len(r.sessions), Started: r.started, Moves: r.moves}
}

// sessionHeader returns the header line that carries session id, or ""
// when there is no session header or id cannot be a header value (it is
// then still routed, only not named to a router).
func (c *Client) sessionHeader(id string) string {
	if c.opts.SessionHeader == "" {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b < 0x20 || b > 0x7e {
			return ""
		}
	}
	return c.opts.SessionHeader + ": " + id + "\r\n"
}

// sessionValue is the value of a header line made by sessionHeader.
func sessionValue(line string) string {
	line = strings.TrimSuffix(line, "\r\n")
	if i := strings.Index(line, ": "); i >= 0 {
		return line[i+2:]
	}
	return line
}
