package rollout

import (
	"context"
	"slices"

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

// routingSnap is a Routing's counters at one moment.
type routingSnap struct {
	metrics []llm.EndpointMetrics // nil when the scrape failed
	stats   llm.Stats
	moves   int64
}

// snapRouting reads the policy's routing counters; ok is false when the
// policy does not route (not a Routing).
func (r *Runner) snapRouting(ctx context.Context) (routingSnap, bool) {
	rt, ok := r.opts.Policy.(Routing)
	if !ok {
		return routingSnap{}, false
	}
	var s routingSnap
	m, err := rt.Metrics(ctx)
	if err != nil {
		r.opts.Logger.Debug("rollout: scraping the policy endpoints' /metrics", zap.Error(err))
	}
	s.metrics = m
	s.stats, s.moves = rt.Stats(), rt.Sessions().Moves
	return s, true
}

// addRouting sets sum's routing fields from the counters before and after
// a run: the prefix cache's hit rate over the endpoints that report it,
// the most and mean completions an endpoint was sent, and sessions moved.
// It warns, naming policy.session_header, when an endpoint reports
// completions that arrived without the session header the client sent
// (a router in front that strips it; serve-sim reports this, vLLM does
// not).
func (r *Runner) addRouting(sum *Summary, a, b routingSnap) {
	var q, h float64
	for i := range b.metrics {
		if i >= len(a.metrics) || b.metrics[i].Err != nil || a.metrics[i].Err != nil || a.metrics[i].Endpoint != b.metrics[i].Endpoint {
			continue
		}
		q += b.metrics[i].PrefixCacheQueries - a.metrics[i].PrefixCacheQueries
		h += b.metrics[i].PrefixCacheHits - a.metrics[i].PrefixCacheHits
		if lost := b.metrics[i].NoSessionHeader - a.metrics[i].NoSessionHeader; lost > 0 {
			if sent := sessionHeadersTo(b.stats, b.metrics[i].Endpoint) - sessionHeadersTo(a.stats, b.metrics[i].Endpoint); sent > 0 {
				r.opts.Logger.Warn("rollout: completions reached the endpoint without the session header parley sent: a router or proxy in front strips it, so it cannot keep a dialogue on one replica (policy.session_header; let the router forward the header)",
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
	sum.EndpointsLost = len(b.stats.Lost)
}

func completionsTo(s llm.Stats, endpoint string) int64 {
	for _, e := range s.Endpoints {
		if e.Endpoint == endpoint {
			return e.Completions
		}
	}
	return 0
}

func sessionHeadersTo(s llm.Stats, endpoint string) int64 {
	for _, e := range s.Endpoints {
		if e.Endpoint == endpoint {
			return e.SessionHeaders
		}
	}
	return 0
}
