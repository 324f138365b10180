package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fault kinds, as counted in Stats.Faults.
const (
	FaultError500       = "error_500"
	FaultError502       = "error_502"
	FaultError503       = "error_503"
	FaultRateLimit      = "rate_limit"
	FaultHang           = "hang"
	FaultDrop           = "drop"
	FaultJudgeMalformed = "judge_malformed"
	FaultJudgeRange     = "judge_out_of_range"
	FaultJudgeRefusal   = "judge_refusal"
)

var faultKinds = []string{FaultError500, FaultError502, FaultError503, FaultRateLimit, FaultHang, FaultDrop,
	FaultJudgeMalformed, FaultJudgeRange, FaultJudgeRefusal}

// faultRNG is the seeded source of every fault and latency draw. It is
// separate from the content RNGs (which are derived from each request), so
// injecting faults never changes what a request returns.
type faultRNG struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newFaultRNG(seed int64) *faultRNG {
	return &faultRNG{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eedfa17))}
}

func (f *faultRNG) float() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64()
}

func (f *faultRNG) norm() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.NormFloat64()
}

// transportFault draws the transport fault of one request ("" for none).
func (s *Server) transportFault() string {
	o := &s.opts
	total := o.ErrorRate + o.RateLimitRate + o.HangRate + o.DropRate
	if total == 0 {
		return ""
	}
	u := s.faults.float()
	switch {
	case u < o.ErrorRate:
		// Which status: the position of u inside the error band.
		switch k := int(3 * u / o.ErrorRate); k {
		case 0:
			return FaultError500
		case 1:
			return FaultError502
		default:
			return FaultError503
		}
	case u < o.ErrorRate+o.RateLimitRate:
		return FaultRateLimit
	case u < o.ErrorRate+o.RateLimitRate+o.HangRate:
		return FaultHang
	case u < total:
		return FaultDrop
	}
	return ""
}

// judgeFault draws the judge misbehaviour of one judge reply.
func (s *Server) judgeFault() judgeFault {
	o := &s.opts
	total := o.JudgeMalformedRate + o.JudgeOutOfRangeRate + o.JudgeRefusalRate
	if total == 0 {
		return judgeOK
	}
	u := s.faults.float()
	switch {
	case u < o.JudgeMalformedRate:
		s.countFault(FaultJudgeMalformed)
		return judgeMalformed
	case u < o.JudgeMalformedRate+o.JudgeOutOfRangeRate:
		s.countFault(FaultJudgeRange)
		return judgeOutOfRange
	case u < total:
		s.countFault(FaultJudgeRefusal)
		return judgeRefusal
	}
	return judgeOK
}

// ParetoCap caps the multiplier of a ParetoAlpha draw.
const ParetoCap = 1000

// latency draws a lognormal latency with the given median, with the heavy
// tail (TailProb, ParetoAlpha) when tail is set.
func (s *Server) latency(median time.Duration, tail bool) time.Duration {
	if median <= 0 {
		return 0
	}
	d := float64(median)
	if s.opts.LatencySigma > 0 {
		d *= math.Exp(s.opts.LatencySigma * s.faults.norm())
	}
	if tail && s.opts.TailProb > 0 && s.faults.float() < s.opts.TailProb {
		d *= s.opts.TailMult
	}
	if tail && s.opts.ParetoAlpha > 0 {
		d *= min(math.Pow(1-s.faults.float(), -1/s.opts.ParetoAlpha), ParetoCap)
	}
	return time.Duration(d)
}

// sleep waits for d, or until the request or the server is done; it
// reports whether the full time passed.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closed:
		return false
	}
}

// injectFault applies a drawn transport fault to the request. It reports
// whether the request has been answered (or dropped) and the handler must
// stop.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request) bool {
	kind := s.transportFault()
	if kind == "" {
		return false
	}
	s.countFault(kind)
	switch kind {
	case FaultError500:
		s.writeError(w, http.StatusInternalServerError, "InternalServerError", "simulated internal server error", "")
	case FaultError502:
		s.writeError(w, http.StatusBadGateway, "BadGateway", "simulated bad gateway", "")
	case FaultError503:
		s.writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "simulated overload: service unavailable", "")
	case FaultRateLimit:
		secs := int64(math.Ceil(s.opts.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		s.writeError(w, http.StatusTooManyRequests, "RateLimitError", "simulated rate limit: too many requests", "")
	case FaultHang:
		switch {
		case s.sleep(r.Context(), s.opts.HangMax):
			s.writeError(w, http.StatusGatewayTimeout, "GatewayTimeout", "simulated hang reached its cap", "")
		case r.Context().Err() == nil:
			// Released by Close: the server is going away.
			s.writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "simulator shutting down", "")
		}
	case FaultDrop:
		drop(w)
	}
	return true
}

// drop closes the client connection without writing a response.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	// HTTP/2 or a recorder: abort the handler, which resets the stream.
	panic(http.ErrAbortHandler)
}
