package chat

import (
	"errors"
	"maps"
	"net/http"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Backend is what a reply says answered it: the model the API reported
// (which may name a dated snapshot of the model asked for) and its
// system_fingerprint ("" when the API sends none). A change of either
// under a run is the judge changing under it.
type Backend struct {
	Model, Fingerprint string
}

// Stats are a client's cumulative counters since it was made; Since gives
// the difference over a span (a training step). Cache hits are not
// requests: they cost nothing and are counted apart.
type Stats struct {
	// Requests counts the requests sent (Chat calls and Ask calls not
	// answered from the cache), each with all its attempts; Failures
	// those that finally failed.
	Requests, Failures int64
	// Attempts counts the HTTP requests made; Retries the attempts after
	// a request's first; RateLimited the attempts answered 429.
	Attempts, Retries, RateLimited int64
	// CacheHits counts the Ask calls answered from the judge cache or by
	// an identical request in flight.
	CacheHits int64
	// PromptTokens, CompletionTokens and CachedTokens total the usage the
	// API reported on every answered attempt, a reply rejected and retried
	// included (it was paid for); CachedTokens is
	// usage.prompt_tokens_details.cached_tokens, prompt tokens the API
	// served from its prompt cache.
	PromptTokens, CompletionTokens, CachedTokens int64
	// Backends counts the answered attempts by reported model and
	// fingerprint.
	Backends map[Backend]int64
	// latencies is how many request latencies the client had logged.
	latencies int
}

// counters is a client's Stats under a mutex, with the log of request
// latencies (one float32 of milliseconds each) that Since reads.
type counters struct {
	mu        sync.Mutex
	s         Stats
	latencies []float32
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	s := c.stats.s
	s.Backends = maps.Clone(s.Backends)
	if s.Backends == nil {
		s.Backends = map[Backend]int64{}
	}
	s.latencies = len(c.stats.latencies)
	return s
}

// Since returns the counters gained since prev (a snapshot Stats returned
// earlier, not a difference; the zero Stats means since the start), with
// the latencies of the requests that finished since, each from its first
// attempt to its last, in the order they finished: Between(prev, Stats()).
func (c *Client) Since(prev Stats) (Stats, []time.Duration) {
	return c.Between(prev, c.Stats())
}

// Between is Since up to the snapshot now rather than up to this moment,
// so that a caller that keeps now as its next prev loses no request that
// finishes in between.
func (c *Client) Between(prev, now Stats) (Stats, []time.Duration) {
	d := Stats{
		Requests: now.Requests - prev.Requests, Failures: now.Failures - prev.Failures,
		Attempts: now.Attempts - prev.Attempts, Retries: now.Retries - prev.Retries,
		RateLimited: now.RateLimited - prev.RateLimited, CacheHits: now.CacheHits - prev.CacheHits,
		PromptTokens: now.PromptTokens - prev.PromptTokens, CompletionTokens: now.CompletionTokens - prev.CompletionTokens,
		CachedTokens: now.CachedTokens - prev.CachedTokens,
		Backends:     map[Backend]int64{},
	}
	for b, n := range now.Backends {
		if n -= prev.Backends[b]; n > 0 {
			d.Backends[b] = n
		}
	}
	c.stats.mu.Lock()
	lo, hi := min(prev.latencies, now.latencies, len(c.stats.latencies)), min(now.latencies, len(c.stats.latencies))
	lat := make([]time.Duration, 0, hi-lo)
	for _, ms := range c.stats.latencies[lo:hi] {
		lat = append(lat, time.Duration(float64(ms)*float64(time.Millisecond)))
	}
	c.stats.mu.Unlock()
	return d, lat
}

// request counts one request finished after elapsed (err nil when it
// succeeded).
func (c *counters) request(elapsed time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Requests++
	if err != nil {
		c.s.Failures++
	}
	c.latencies = append(c.latencies, float32(elapsed.Seconds()*1000))
}

// attempt counts one HTTP attempt: retry when it is not its request's
// first, its 429, or the usage and backend of its reply.
func (c *counters) attempt(retry bool, resp *openai.ChatCompletionResponse, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Attempts++
	if retry {
		c.s.Retries++
	}
	if err != nil {
		if statusOf(err) == http.StatusTooManyRequests {
			c.s.RateLimited++
		}
		return
	}
	c.s.PromptTokens += int64(resp.Usage.PromptTokens)
	c.s.CompletionTokens += int64(resp.Usage.CompletionTokens)
	if d := resp.Usage.PromptTokensDetails; d != nil {
		c.s.CachedTokens += int64(d.CachedTokens)
	}
	if c.s.Backends == nil {
		c.s.Backends = map[Backend]int64{}
	}
	c.s.Backends[Backend{Model: resp.Model, Fingerprint: resp.SystemFingerprint}]++
}

// cacheHit counts an Ask answered without a request.
func (c *counters) cacheHit() {
	c.mu.Lock()
	c.s.CacheHits++
	c.mu.Unlock()
}

// statusOf is the HTTP status of a failed attempt, 0 when it has none.
func statusOf(err error) int {
	var (
		apiErr *openai.APIError
		reqErr *openai.RequestError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		return reqErr.HTTPStatusCode
	}
	return 0
}
