// Package retry is parley's one retry policy for HTTP clients (the vLLM
// policy client and the OpenAI-compatible chat client): how many retries,
// the full-jitter exponential backoff between them (Backoff), the server's
// requested wait read from the response headers (After), and how the two
// combine (Policy.Wait). The retry loops themselves stay with their clients,
// which differ in what they retry.
package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is a retry policy; its zero fields take a client's defaults
// (WithDefaults).
type Policy struct {
	// MaxRetries is the number of retries after the first attempt: 0 takes
	// the default, a negative value means none.
	MaxRetries int
	// BackoffBase and BackoffMax shape the full-jitter exponential backoff:
	// the wait before retry n is uniform in [0, min(BackoffMax,
	// BackoffBase·2^(n-1))].
	BackoffBase, BackoffMax time.Duration
	// AfterMax caps a server's requested wait (Retry-After), which replaces
	// the backoff when it is longer.
	AfterMax time.Duration
}

// Default is the policy of every client unless configured otherwise: 6
// retries, backoff from 500ms up to 30s, a server's Retry-After honoured up
// to 5 minutes.
var Default = Policy{MaxRetries: 6, BackoffBase: 500 * time.Millisecond, BackoffMax: 30 * time.Second, AfterMax: 5 * time.Minute}

// WithDefaults fills p's zero fields from def (MaxRetries 0 too; a negative
// MaxRetries becomes 0, no retries) and clamps BackoffMax to at least
// BackoffBase.
func (p Policy) WithDefaults(def Policy) Policy {
	switch {
	case p.MaxRetries == 0:
		p.MaxRetries = def.MaxRetries
	case p.MaxRetries < 0:
		p.MaxRetries = 0
	}
	if p.BackoffBase <= 0 {
		p.BackoffBase = def.BackoffBase
	}
	if p.BackoffMax <= 0 {
		p.BackoffMax = def.BackoffMax
	}
	if p.BackoffMax < p.BackoffBase {
		p.BackoffMax = p.BackoffBase
	}
	if p.AfterMax <= 0 {
		p.AfterMax = def.AfterMax
	}
	return p
}

// Count is the policy of a config key max_retries, where 0 means no
// retries (one attempt), on top of def.
func Count(def Policy, maxRetries int) Policy {
	p := def
	p.MaxRetries = maxRetries
	if maxRetries == 0 {
		p.MaxRetries = -1
	}
	return p
}

// Attempts is 1 + MaxRetries.
func (p Policy) Attempts() int { return 1 + max(p.MaxRetries, 0) }

// Wait is the wait before retry number attempt (1-based): the jittered
// backoff, or the server's requested wait after (0: none) when that is
// longer, capped at AfterMax. rng is as in Backoff.
func (p Policy) Wait(attempt int, after time.Duration, rng *rand.Rand) time.Duration {
	d := Backoff(attempt, p.BackoffBase, p.BackoffMax, rng)
	if after > d {
		d = min(after, p.AfterMax)
	}
	return d
}

// MaxAfter caps the wait After returns, so a broken header cannot stall a
// caller for longer; callers usually cap it further.
const MaxAfter = 24 * time.Hour

// After returns the wait a response asks for, read from its headers:
// OpenAI's retry-after-ms (milliseconds, integer or decimal) when it holds
// a positive number, otherwise the standard Retry-After, as delta-seconds
// (integer or decimal, e.g. "2" or "1.5") or as an HTTP date (measured from
// now; a date in the past gives 0). The wait is capped at MaxAfter. ok is
// false when neither header is present or readable, or the value is
// negative.
func After(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, ok := parseDecimal(v); ok && ms > 0 {
			return capped(ms, time.Millisecond), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, ok := parseDecimal(v); ok {
		return capped(s, time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxAfter), true
	}
	return 0, false
}

// parseDecimal parses a non-negative decimal number: digits with at most
// one '.', and at least one digit. Unlike strconv.ParseFloat it rejects
// signs, exponents, hex, "Inf" and "NaN".
func parseDecimal(v string) (float64, bool) {
	digits, dots := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// capped returns n units, at most MaxAfter.
func capped(n float64, unit time.Duration) time.Duration {
	if n >= float64(MaxAfter/unit) {
		return MaxAfter
	}
	return time.Duration(n * float64(unit))
}

// Backoff returns a full-jitter exponential backoff: the wait before retry
// number attempt (1-based; values below 1 count as 1), drawn uniformly from
// [0, min(maxWait, base·2^(attempt-1))], both ends included. It returns 0
// when that bound is not positive (base or maxWait zero or negative).
//
// rng supplies the randomness; a *rand.Rand is not safe for concurrent use,
// so callers sharing one must serialise calls. A nil rng draws from
// math/rand/v2's global source, which is.
func Backoff(attempt int, base, maxWait time.Duration, rng *rand.Rand) time.Duration {
	ceil := base
	for i := 1; i < attempt && ceil < maxWait; i++ {
		if ceil > maxWait/2 {
			ceil = maxWait
			break
		}
		ceil *= 2
	}
	ceil = min(ceil, maxWait, math.MaxInt64-1) // Int64N(ceil+1) must not overflow
	if ceil <= 0 {
		return 0
	}
	if rng == nil {
		return time.Duration(rand.Int64N(int64(ceil) + 1))
	}
	return time.Duration(rng.Int64N(int64(ceil) + 1))
}

// Sleep waits d, or until ctx is done; it returns ctx's error in that case
// (and at once when d <= 0 and ctx is already done).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
