package sim

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"
)

// faultBodies are requests to every endpoint faults apply to.
func faultBodies(t *testing.T) map[string]any {
	prompt := NewTokenizer().ApplyChatTemplate(gameMessages(0), TemplateOptions{AddGenerationPrompt: true})
	return map[string]any{
		PathTokenize:    map[string]any{"messages": gameMessages(0)},
		PathDetokenize:  map[string]any{"tokens": prompt},
		PathCompletions: completionReq(prompt, 8, 1, 1),
		PathChat:        judgeReq(SchemaCAScore, "Final completion: together."),
	}
}

func TestFaultErrors(t *testing.T) {
	srv, ts := startServer(t, Options{ErrorRate: 1})
	codes := map[int]int{}
	for path, body := range faultBodies(t) {
		for i := 0; i < 15; i++ {
			r, err := post(http.DefaultClient, ts.URL+path, body)
			if err != nil {
				t.Fatalf("POST %s: %v", path, err)
			}
			codes[r.status]++
			var e struct {
				Error struct {
					Message string
					Code    int
				}
			}
			if json.Unmarshal(r.body, &e) != nil || e.Error.Message == "" || e.Error.Code != r.status {
				t.Errorf("POST %s = %d %s, want a vLLM error body", path, r.status, r.body)
			}
		}
	}
	var got []int
	for c := range codes {
		got = append(got, c)
	}
	sort.Ints(got)
	if !slices.Equal(got, []int{500, 502, 503}) {
		t.Errorf("status codes = %v, want 500, 502 and 503", got)
	}
	st := srv.Stats()
	if n := st.Faults[FaultError500] + st.Faults[FaultError502] + st.Faults[FaultError503]; n != 60 {
		t.Errorf("Stats().Faults = %v, want 60 errors", st.Faults)
	}
	// Health, metrics and models never fail.
	for _, p := range []string{PathHealth, PathMetrics, PathModels} {
		resp, err := http.Get(ts.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s with ErrorRate 1: %v %v, want 200", p, err, resp)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

func TestFaultRateLimit(t *testing.T) {
	_, ts := startServer(t, Options{RateLimitRate: 1, RetryAfter: 1500 * time.Millisecond})
	for path, body := range faultBodies(t) {
		r, err := post(http.DefaultClient, ts.URL+path, body)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "2" {
			t.Errorf("POST %s = %d, Retry-After %q; want 429 with Retry-After 2", path, r.status, r.header.Get("Retry-After"))
		}
	}
}

func TestFaultDrop(t *testing.T) {
	srv, ts := startServer(t, Options{DropRate: 1})
	for path, body := range faultBodies(t) {
		r, err := post(http.DefaultClient, ts.URL+path, body)
		if err == nil {
			t.Errorf("POST %s with DropRate 1 = %d, want a transport error", path, r.status)
		}
	}
	if n := srv.Stats().Faults[FaultDrop]; n != 4 {
		t.Errorf("Stats().Faults[drop] = %d, want 4", n)
	}
}

func TestFaultHang(t *testing.T) {
	srv, ts := startServer(t, Options{HangRate: 1})
	client := &http.Client{Timeout: 100 * time.Millisecond}
	for path, body := range faultBodies(t) {
		_, err := post(client, ts.URL+path, body)
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("POST %s with HangRate 1: err %v, want the client's timeout", path, err)
		}
	}
	if n := srv.Stats().Faults[FaultHang]; n != 4 {
		t.Errorf("Stats().Faults[hang] = %d, want 4", n)
	}
	// Close releases a hang that no client timeout would end.
	done := make(chan httpResult, 1)
	go func() {
		r, _ := post(http.DefaultClient, ts.URL+PathTokenize, map[string]any{"prompt": "x"})
		done <- r
	}()
	waitFor(t, "the hang to start", func() bool { return srv.Stats().Faults[FaultHang] == 5 })
	srv.Close()
	if r := <-done; r.status != http.StatusServiceUnavailable {
		t.Errorf("hung request after Close = %d, want 503", r.status)
	}
}

func TestFaultHangCap(t *testing.T) {
	_, ts := startServer(t, Options{HangRate: 1, HangMax: time.Millisecond})
	r, err := post(http.DefaultClient, ts.URL+PathTokenize, map[string]any{"prompt": "x"})
	if err != nil || r.status != http.StatusGatewayTimeout {
		t.Errorf("hang past HangMax = %v %d, want 504", err, r.status)
	}
}

// TestLatencyDistribution checks the drawn latencies (no clocks involved).
func TestLatencyDistribution(t *testing.T) {
	tests := []struct {
		name               string
		opts               Options
		tail               bool
		wantMedianLo, HiMs float64
		wantTailFrac       float64
	}{
		{"fixed", Options{LatencyMedian: 100 * time.Millisecond}, true, 100, 100, 0},
		{"lognormal", Options{LatencyMedian: 100 * time.Millisecond, LatencySigma: 0.5}, true, 95, 105, 0},
		{"tail", Options{LatencyMedian: 100 * time.Millisecond, TailProb: 0.1}, true, 100, 100, 0.1},
		{"tail off for tokenize", Options{LatencyMedian: 100 * time.Millisecond, TailProb: 0.5}, false, 100, 100, 0},
		// Pareto(1.5): median 2^(1/1.5) = 1.59×, P(≥ 5×) = 5^-1.5 = 0.089.
		{"pareto", Options{LatencyMedian: 100 * time.Millisecond, ParetoAlpha: 1.5}, true, 152, 166, 0.089},
		{"pareto off for tokenize", Options{LatencyMedian: 100 * time.Millisecond, ParetoAlpha: 1.5}, false, 100, 100, 0},
	}
	for _, tt := range tests {
		s, err := New(tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20001
		ds := make([]float64, n)
		tails := 0
		for i := range ds {
			d := s.latency(tt.opts.LatencyMedian, tt.tail)
			ds[i] = float64(d) / float64(time.Millisecond)
			if d >= 500*time.Millisecond && tt.opts.LatencySigma == 0 {
				tails++
			}
		}
		sort.Float64s(ds)
		if med := ds[n/2]; med < tt.wantMedianLo || med > tt.HiMs {
			t.Errorf("%s: median latency %.1fms, want %.0f..%.0fms", tt.name, med, tt.wantMedianLo, tt.HiMs)
		}
		if frac := float64(tails) / n; frac < tt.wantTailFrac-0.01 || frac > tt.wantTailFrac+0.01 {
			t.Errorf("%s: tail fraction %.3f, want %.2f", tt.name, frac, tt.wantTailFrac)
		}
	}
	// The tail multiplies by TailMult.
	s, _ := New(Options{LatencyMedian: time.Second, TailProb: 1, TailMult: 3})
	if d := s.latency(time.Second, true); d != 3*time.Second {
		t.Errorf("latency with TailProb 1, TailMult 3 = %v, want 3s", d)
	}
}

// TestFaultDrawsAreSeeded checks that two servers with one FaultSeed inject
// the same faults in the same order.
func TestFaultDrawsAreSeeded(t *testing.T) {
	draw := func(seed int64) []string {
		s, err := New(Options{ErrorRate: 0.2, RateLimitRate: 0.2, HangRate: 0.1, DropRate: 0.1, FaultSeed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := 0; i < 200; i++ {
			out = append(out, s.transportFault())
		}
		return out
	}
	a, b, c := draw(1), draw(1), draw(2)
	if !slices.Equal(a, b) {
		t.Errorf("FaultSeed 1 twice gives different fault sequences")
	}
	if slices.Equal(a, c) {
		t.Errorf("FaultSeed 1 and 2 give the same fault sequence")
	}
	none := 0
	for _, f := range a {
		if f == "" {
			none++
		}
	}
	if none < 60 || none > 100 {
		t.Errorf("%d of 200 requests without a fault, want about 80", none)
	}
}
