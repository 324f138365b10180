package llm

import (
	"sync"
	"sync/atomic"
	"time"
)

// counters are the client's running totals.
type counters struct {
	requests, attempts, retries, failures atomic.Int64
	transport, timeouts                   atomic.Int64
	status                                [600]atomic.Int64
}

func (c *counters) countStatus(code int) {
	if code >= 0 && code < len(c.status) {
		c.status[code].Add(1)
	}
}

// Stats is a snapshot of a Client's counters.
type Stats struct {
	Requests        int64         // logical calls (a call on every endpoint counts once per endpoint)
	Attempts        int64         // HTTP exchanges started
	Retries         int64         // attempts made after a retryable failure
	Failures        int64         // calls that returned an error
	TransportErrors int64         // attempts with no complete response (timeouts included)
	Timeouts        int64         // attempts that ran past RequestTimeout
	ByStatus        map[int]int64 // attempts by HTTP status answered
	Endpoints       []EndpointStats
	// Lost are the endpoints out of rotation because an adapter load or
	// unload could not reach them, until they answer again (Client.Lost).
	Lost []string
}

// EndpointStats is one endpoint's share of a Stats snapshot.
type EndpointStats struct {
	Endpoint        string
	Outstanding     int64 // requests assigned and not finished, waiting ones included
	Attempts        int64
	Completions     int64 // completion attempts sent to it: its share of the load
	SessionHeaders  int64 // completion attempts that carried the session header
	TransportErrors int64
	Down            bool // out of rotation now
	// InFlightSeconds is the integral over time of the requests holding
	// one of its slots (sent and not yet answered), in request-seconds:
	// its growth over an interval divided by the interval is the mean
	// number in flight. AtTargetSeconds is the time during which every
	// slot (Options.MaxConcurrentPerEndpoint, the in-flight target) was
	// held.
	InFlightSeconds float64
	AtTargetSeconds float64
}

// occupancy integrates an endpoint's requests in flight over time.
type occupancy struct {
	mu     sync.Mutex
	n      int   // requests in flight now
	seen   bool  // last is set
	last   int64 // unix nanoseconds of the last change or read
	reqNS  float64
	fullNS int64
}

// change moves the count in flight by delta at now (unix nanoseconds),
// after adding the time since the last change at the old count; target is
// the count that fills every slot. A delta of 0 only brings the integrals
// up to now.
func (o *occupancy) change(delta, target int, now int64) (reqSeconds, fullSeconds float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen && now > o.last {
		dt := now - o.last
		o.reqNS += float64(o.n) * float64(dt)
		if o.n >= target {
			o.fullNS += dt
		}
	}
	o.seen, o.last = true, now
	o.n += delta
	return o.reqNS / 1e9, float64(o.fullNS) / 1e9
}

// Stats returns a snapshot of the counters.
func (c *Client) Stats() Stats {
	eps := c.endpoints()
	s := Stats{
		Requests:        c.stats.requests.Load(),
		Attempts:        c.stats.attempts.Load(),
		Retries:         c.stats.retries.Load(),
		Failures:        c.stats.failures.Load(),
		TransportErrors: c.stats.transport.Load(),
		Timeouts:        c.stats.timeouts.Load(),
		ByStatus:        map[int]int64{},
		Endpoints:       make([]EndpointStats, len(eps)),
		Lost:            c.Lost(),
	}
	for code := range c.stats.status {
		if n := c.stats.status[code].Load(); n != 0 {
			s.ByStatus[code] = n
		}
	}
	now := time.Now().UnixNano()
	for i, ep := range eps {
		inFlight, atTarget := ep.occ.change(0, c.opts.MaxConcurrentPerEndpoint, now)
		s.Endpoints[i] = EndpointStats{
			InFlightSeconds: inFlight,
			AtTargetSeconds: atTarget,
			Endpoint:        ep.name,
			Outstanding:     ep.outstanding.Load(),
			Attempts:        ep.attempts.Load(),
			Completions:     ep.completions.Load(),
			SessionHeaders:  ep.sessionHeaders.Load(),
			TransportErrors: ep.transport.Load(),
			Down:            ep.isDown(now),
		}
	}
	return s
}
