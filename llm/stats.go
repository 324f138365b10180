package llm

import (
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
		s.Endpoints[i] = EndpointStats{
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
