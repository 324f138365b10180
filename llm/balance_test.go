package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		endpoints []string
		wantErr   string // empty: success
		wantNames []string
	}{
		{"none", nil, "no endpoints", nil},
		{"bad scheme", []string{"http://a:1", "ftp://b:2"}, `"ftp://b:2"`, nil},
		{"no host", []string{"http://"}, "no host", nil},
		{"unparseable", []string{"http://a:1", "http://[::1"}, `"http://[::1"`, nil},
		{"query", []string{"http://a:1/?x=1"}, "query", nil},
		{"duplicate", []string{"http://a:1", "http://a:1/v1/"}, "twice", nil},
		{"normalised", []string{"http://a:1/", "https://b/v1", "http://u:secret@c:3/prefix"}, "",
			[]string{"http://a:1", "https://b", "http://u:xxxxx@c:3/prefix"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Options{Endpoints: tt.endpoints})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New(%q) = %v, want an error containing %s", tt.endpoints, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q) = %v", tt.endpoints, err)
			}
			defer c.Close()
			if got := c.Endpoints(); strings.Join(got, " ") != strings.Join(tt.wantNames, " ") {
				t.Errorf("New(%q).Endpoints() = %q, want %q", tt.endpoints, got, tt.wantNames)
			}
		})
	}
}

func TestBalanceRoundRobinWhenIdle(t *testing.T) {
	servers := []*fakeVLLM{newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t)}
	c := newTestClient(t, testOptions(servers[0].srv.URL, servers[1].srv.URL, servers[2].srv.URL))
	for i := 0; i < 30; i++ {
		if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
			t.Fatalf("Complete #%d = %v", i, err)
		}
	}
	for i, s := range servers {
		if n := s.hits.Load(); n != 10 {
			t.Errorf("server %d got %d of 30 sequential requests, want 10", i, n)
		}
	}
}

func TestBalanceAvoidsBusyEndpoint(t *testing.T) {
	slow, fast1, fast2 := newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t)
	slow.delay = 300 * time.Millisecond
	c := newTestClient(t, testOptions(slow.srv.URL, fast1.srv.URL, fast2.srv.URL))
	const total, workers = 300, 24
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
					t.Errorf("Complete = %v", err)
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	s, f1, f2 := slow.hits.Load(), fast1.hits.Load(), fast2.hits.Load()
	if s+f1+f2 != total {
		t.Fatalf("servers saw %d+%d+%d requests, want %d", s, f1, f2, total)
	}
	if s >= f1 || s >= f2 || s >= total/3 {
		t.Errorf("slow server got %d requests, fast ones %d and %d: want the slow one to get clearly fewer", s, f1, f2)
	}
	for i, e := range c.Stats().Endpoints {
		if e.Outstanding != 0 {
			t.Errorf("endpoint %d outstanding = %d after all calls returned, want 0", i, e.Outstanding)
		}
	}
}

func TestConcurrencyLimitPerEndpoint(t *testing.T) {
	f := newFakeVLLM(t)
	f.delay = 5 * time.Millisecond
	opts := testOptions(f.srv.URL)
	opts.MaxConcurrentPerEndpoint = 3
	c := newTestClient(t, opts)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
				t.Errorf("Complete = %v", err)
			}
		}()
	}
	wg.Wait()
	if m := f.maxInflight.Load(); m > 3 || m < 1 {
		t.Errorf("server saw at most %d requests in flight, want between 1 and the limit 3", m)
	}
	if n := f.hits.Load(); n != 40 {
		t.Errorf("server saw %d requests, want 40", n)
	}
}

func TestUnhealthyEndpointIsSkipped(t *testing.T) {
	good1, bad, good2 := newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t)
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		bad.serve(w, r)
	}))
	t.Cleanup(sick.Close)
	c := newTestClient(t, testOptions(good1.srv.URL, sick.URL, good2.srv.URL))
	err := c.Health(context.Background())
	if err == nil || !strings.Contains(err.Error(), sick.URL) || strings.Contains(err.Error(), good1.srv.URL) || !strings.Contains(err.Error(), "1 of 3") {
		t.Fatalf("Health = %v, want an error naming only %s", err, sick.URL)
	}
	if !c.Stats().Endpoints[1].Down {
		t.Errorf("Stats().Endpoints[1].Down = false after a failed health check, want true")
	}
	for i := 0; i < 20; i++ {
		if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
			t.Fatalf("Complete = %v", err)
		}
	}
	if n := bad.hits.Load(); n != 0 {
		t.Errorf("unhealthy endpoint got %d requests, want 0", n)
	}
	if a, b := good1.hits.Load(), good2.hits.Load(); a != 10 || b != 10 {
		t.Errorf("healthy endpoints got %d and %d requests, want 10 each", a, b)
	}
}

func TestRefusingEndpointTakenOutOfRotation(t *testing.T) {
	good := newFakeVLLM(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connections to it are now refused
	opts := testOptions(deadURL, good.srv.URL)
	opts.DownAfter = 2
	opts.DownFor = time.Hour
	c := newTestClient(t, opts)
	for i := 0; i < 20; i++ {
		if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
			t.Fatalf("Complete #%d = %v", i, err)
		}
	}
	s := c.Stats()
	if s.Endpoints[0].TransportErrors != 2 || !s.Endpoints[0].Down {
		t.Errorf("dead endpoint stats = %+v, want 2 transport errors and down", s.Endpoints[0])
	}
	if n := good.hits.Load(); n != 20 {
		t.Errorf("good endpoint got %d requests, want all 20", n)
	}
}

func TestRetryPrefersAnotherEndpoint(t *testing.T) {
	failing := serveFixed(t, http.StatusServiceUnavailable, []byte(`{"error":{"message":"overloaded","type":"x","code":503}}`))
	good := newFakeVLLM(t)
	c := newTestClient(t, testOptions(failing.srv.URL, good.srv.URL))
	for i := 0; i < 10; i++ {
		if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
			t.Fatalf("Complete #%d = %v", i, err)
		}
	}
	// Each call that starts on the failing endpoint retries on the good one.
	if f, g := failing.hits.Load(), good.hits.Load(); g != 10 || f > 10 {
		t.Errorf("failing endpoint got %d attempts, good one %d; want the good one to answer all 10 calls", f, g)
	}
}

func TestAllEndpointsDownStillTried(t *testing.T) {
	f := newFakeVLLM(t)
	opts := testOptions(f.srv.URL, "http://127.0.0.1:1")
	c := newTestClient(t, opts)
	for _, ep := range c.endpoints() {
		c.markDown(ep, time.Now().Add(time.Hour).UnixNano(), "test", nil)
	}
	if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Complete with every endpoint down = %v, want it to try anyway", err)
	}
}

func TestBackgroundHealthChecks(t *testing.T) {
	var mu sync.Mutex
	healthy := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	opts := testOptions(srv.URL)
	opts.HealthInterval = 5 * time.Millisecond
	c := newTestClient(t, opts)
	waitFor(t, "endpoint marked down", func() bool { return c.Stats().Endpoints[0].Down })
	mu.Lock()
	healthy = true
	mu.Unlock()
	waitFor(t, "endpoint back up", func() bool { return !c.Stats().Endpoints[0].Down })
	c.Close()
	if err := c.Health(context.Background()); err == nil || !strings.Contains(err.Error(), ErrClosed.Error()) {
		t.Errorf("Health after Close = %v, want %v", err, ErrClosed)
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
