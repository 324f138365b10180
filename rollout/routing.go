package rollout

import (
	"context"
	"slices"
	"time"

	"github.com/parleyhq/parley/llm"
	"go.uber.org/zap"
)

// Routing is what a policy client that routes by session reports
// (*llm.Client): its endpoints' /metrics (the prefix cache's counters) and
// its own per-endpoint counters. A Runner whose policy has it reads both
// at the start and the end of a run, a step's boundaries.
type Routing interface {
	Metrics(ctx context.Context) ([]llm.EndpointMetrics, error)
	Stats() llm.Stats
	Sessions() llm.SessionStats
}

// RoutingSnap is a Routing's counters at one moment (SnapRouting).
type RoutingSnap struct {
	metrics []llm.EndpointMetrics // nil when the scrape failed
	stats   llm.Stats
	moves   int64
	at      time.Time
}

// SnapRouting reads policy's routing counters; ok is false when the
// policy does not route (not a Routing). Summary.AddRouting compares two.
func SnapRouting(ctx context.Context, policy Policy, log *zap.Logger) (RoutingSnap, bool) {
	rt, ok := policy.(Routing)
	if !ok {
		return RoutingSnap{}, false
	}
	var s RoutingSnap
	m, err := rt.Metrics(ctx)
	if err != nil {
		log.Debug("rollout: scraping the policy endpoints' /metrics", zap.Error(err))
	}
	s.metrics = m
	s.stats, s.moves, s.at = rt.Stats(), rt.Sessions().Moves, time.Now()
	return s, true
}

// AddRouting sets sum's routing fields from the counters before and after
// a run: the prefix cache's hit rate over the endpoints that report it,
// the most and mean completions an endpoint was sent, and sessions moved.
// It warns, naming policy.session_header, when an endpoint reports
// completions that arrived without the session header the client sent
// (a router in front that strips it; serve-sim reports this, vLLM does
// not).
func (sum *Summary) AddRouting(a, b RoutingSnap, log *zap.Logger) {
	var q, h float64
	for i := range b.metrics {
		if i >= len(a.metrics) || b.metrics[i].Err != nil || a.metrics[i].Err != nil || a.metrics[i].Endpoint != b.metrics[i].Endpoint {
			continue
		}
		q += b.metrics[i].PrefixCacheQueries - a.metrics[i].PrefixCacheQueries
		h += b.metrics[i].PrefixCacheHits - a.metrics[i].PrefixCacheHits
		if lost := b.metrics[i].NoSessionHeader - a.metrics[i].NoSessionHeader; lost > 0 {
			if sent := sessionHeadersTo(b.stats, b.metrics[i].Endpoint) - sessionHeadersTo(a.stats, b.metrics[i].Endpoint); sent > 0 {
				log.Warn("rollout: completions reached the endpoint without the session header parley sent: a router or proxy in front strips it, so it cannot keep a dialogue on one replica (policy.session_header; let the router forward the header)",
					zap.String("endpoint", b.metrics[i].Endpoint), zap.Float64("without_header", lost), zap.Int64("sent_with_header", sent))
			}
		}
	}
	if q > 0 {
		sum.PrefixCacheHitRate = h / q
	}
	sum.PrefixCacheQueries, sum.PrefixCacheHits = int64(q), int64(h)
	var loads []float64
	for _, e := range b.stats.Endpoints {
		n := e.Completions - completionsTo(a.stats, e.Endpoint)
		loads = append(loads, float64(n))
	}
	if len(loads) > 0 {
		var total float64
		for _, l := range loads {
			total += l
		}
		sum.EndpointLoadMax, sum.EndpointLoadMean = slices.Max(loads), total/float64(len(loads))
	}
	sum.SessionMoves = b.moves - a.moves
	if dt := b.at.Sub(a.at).Seconds(); dt > 0 && len(b.stats.Endpoints) > 0 {
		var in, full float64
		sum.Occupancy = sum.Occupancy[:0]
		for _, e := range b.stats.Endpoints {
			ea := endpointStats(a.stats, e.Endpoint)
			ein, efull := e.InFlightSeconds-ea.InFlightSeconds, e.AtTargetSeconds-ea.AtTargetSeconds
			in, full = in+ein, full+efull
			sum.Occupancy = append(sum.Occupancy, Occupancy{Endpoint: e.Endpoint, InFlightMean: ein / dt, AtTargetShare: efull / dt})
		}
		n := float64(len(b.stats.Endpoints))
		sum.EndpointInFlightMean, sum.EndpointAtTargetShare = in/dt/n, full/dt/n
	}
	sum.EndpointsLost = len(b.stats.Lost)
}

// endpointStats is endpoint's entry in s, zero when it has none.
func endpointStats(s llm.Stats, endpoint string) llm.EndpointStats {
	for _, e := range s.Endpoints {
		if e.Endpoint == endpoint {
			return e
		}
	}
	return llm.EndpointStats{}
}

func completionsTo(s llm.Stats, endpoint string) int64 { return endpointStats(s, endpoint).Completions }

func sessionHeadersTo(s llm.Stats, endpoint string) int64 {
	return endpointStats(s, endpoint).SessionHeaders
}
