// Package retry holds the pieces of parley's HTTP retry loops that do not
// depend on the client: reading a server's requested wait from the
// response headers (After) and the jittered exponential backoff used when
// the server asks for none (Backoff). The retry loops themselves, and the
// precedence and caps between the two waits, stay with their clients.
package retry

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

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
