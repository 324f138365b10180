package retry

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestAfter(t *testing.T) {
	now := time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{"absent", nil, 0, false},
		{"empty", map[string]string{"Retry-After": ""}, 0, false},
		{"delta seconds", map[string]string{"Retry-After": "5"}, 5 * time.Second, true},
		{"delta seconds padded", map[string]string{"Retry-After": " 3 "}, 3 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"decimal seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"negative", map[string]string{"Retry-After": "-5"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"exponent rejected", map[string]string{"Retry-After": "1e3"}, 0, false},
		{"NaN rejected", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"Inf rejected", map[string]string{"Retry-After": "Inf"}, 0, false},
		{"two dots", map[string]string{"Retry-After": "1.2.3"}, 0, false},
		{"lone dot", map[string]string{"Retry-After": "."}, 0, false},
		{"capped at a day", map[string]string{"Retry-After": "999999999999999999999"}, MaxAfter, true},
		{"exactly a day", map[string]string{"Retry-After": "86400"}, MaxAfter, true},
		{"HTTP date", map[string]string{"Retry-After": "Mon, 01 Sep 2025 12:00:30 GMT"}, 30 * time.Second, true},
		{"HTTP date in the past", map[string]string{"Retry-After": "Mon, 01 Sep 2025 11:00:00 GMT"}, 0, true},
		{"RFC 850 date", map[string]string{"Retry-After": "Monday, 01-Sep-25 12:00:10 GMT"}, 10 * time.Second, true},
		{"ANSI C date", map[string]string{"Retry-After": "Mon Sep  1 12:00:20 2025"}, 20 * time.Second, true},
		{"HTTP date capped", map[string]string{"Retry-After": "Mon, 01 Sep 2125 12:00:00 GMT"}, MaxAfter, true},
		{"retry-after-ms", map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"retry-after-ms decimal", map[string]string{"Retry-After-Ms": "2.5"}, 2500 * time.Microsecond, true},
		{"retry-after-ms wins", map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, 250 * time.Millisecond, true},
		{"retry-after-ms zero falls back", map[string]string{"Retry-After-Ms": "0", "Retry-After": "7"}, 7 * time.Second, true},
		{"retry-after-ms garbage falls back", map[string]string{"Retry-After-Ms": "x", "Retry-After": "7"}, 7 * time.Second, true},
		{"retry-after-ms zero alone", map[string]string{"Retry-After-Ms": "0"}, 0, false},
		{"retry-after-ms exponent rejected", map[string]string{"Retry-After-Ms": "1e99"}, 0, false},
		{"retry-after-ms huge", map[string]string{"Retry-After-Ms": "99999999999999"}, MaxAfter, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		got, ok := After(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: After(%v) = %v, %v, want %v, %v", tt.name, tt.headers, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBackoffIsFullJitterAndCapped(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	tests := []struct {
		attempt       int
		base, maxWait time.Duration
		ceil          time.Duration
	}{
		{1, 10 * time.Millisecond, 50 * time.Millisecond, 10 * time.Millisecond},
		{0, 10 * time.Millisecond, 50 * time.Millisecond, 10 * time.Millisecond},
		{-3, 10 * time.Millisecond, 50 * time.Millisecond, 10 * time.Millisecond},
		{2, 10 * time.Millisecond, 50 * time.Millisecond, 20 * time.Millisecond},
		{3, 10 * time.Millisecond, 50 * time.Millisecond, 40 * time.Millisecond},
		{4, 10 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond},
		{1000, 10 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond},
		{1, time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
		{64, time.Second, math.MaxInt64, math.MaxInt64 - 1},
		{70, 3 * time.Hour, time.Duration(math.MaxInt64 - 5), time.Duration(math.MaxInt64 - 5)},
	}
	for _, tt := range tests {
		var lo, hi time.Duration = math.MaxInt64, 0
		for range 500 {
			d := Backoff(tt.attempt, tt.base, tt.maxWait, rng)
			if d < 0 || d > tt.ceil {
				t.Fatalf("Backoff(%d, %v, %v) = %v, want in [0, %v]", tt.attempt, tt.base, tt.maxWait, d, tt.ceil)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter: the draws span the whole range, low end included.
		if lo > tt.ceil/10 || hi < tt.ceil*9/10 {
			t.Errorf("Backoff(%d, %v, %v) spans [%v, %v] in 500 draws, want about [0, %v]", tt.attempt, tt.base, tt.maxWait, lo, hi, tt.ceil)
		}
	}
}

func TestBackoffDegenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		attempt       int
		base, maxWait time.Duration
	}{
		{1, 0, time.Second},
		{5, 0, time.Second},
		{3, -time.Second, time.Second},
		{1, time.Second, 0},
		{2, time.Second, -time.Second},
	}
	for _, tt := range tests {
		if d := Backoff(tt.attempt, tt.base, tt.maxWait, rng); d != 0 {
			t.Errorf("Backoff(%d, %v, %v) = %v, want 0", tt.attempt, tt.base, tt.maxWait, d)
		}
	}
	if d := Backoff(1, 1, 1, nil); d < 0 || d > 1 {
		t.Errorf("Backoff(1, 1ns, 1ns, nil) = %v, want 0 or 1ns", d)
	}
}

func TestBackoffSeededIsReproducible(t *testing.T) {
	a, b := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	for attempt := 1; attempt <= 20; attempt++ {
		da := Backoff(attempt, time.Millisecond, time.Second, a)
		db := Backoff(attempt, time.Millisecond, time.Second, b)
		if da != db {
			t.Errorf("Backoff(%d) with equal seeds = %v and %v, want equal", attempt, da, db)
		}
	}
}

func TestBackoffNilRNGIsConcurrencySafe(t *testing.T) {
	done := make(chan time.Duration)
	for range 8 {
		go func() {
			var top time.Duration
			for attempt := 1; attempt <= 200; attempt++ {
				top = max(top, Backoff(attempt, time.Millisecond, 8*time.Millisecond, nil))
			}
			done <- top
		}()
	}
	for range 8 {
		if top := <-done; top < 0 || top > 8*time.Millisecond {
			t.Errorf("Backoff(nil rng) max draw = %v, want in [0, 8ms]", top)
		}
	}
}
