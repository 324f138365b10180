package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/sim"
)

// fakeResolver answers LookupHost from a table that tests change.
type fakeResolver struct {
	mu    sync.Mutex
	addrs map[string][]string
	err   error
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	return slices.Clone(r.addrs[host]), nil
}

func (r *fakeResolver) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs[host], r.err = addrs, nil
}

// loopbackSims serves a serve-sim on each of 127.0.0.1..n, all on one port
// (every 127/8 address is loopback on Linux), as replicas behind one name.
func loopbackSims(t *testing.T, n int) (port string, sims []*sim.Server) {
	t.Helper()
	for i := 1; i <= n; i++ {
		addr := fmt.Sprintf("127.0.0.%d:", i)
		if port != "" {
			addr += port
		} else {
			addr += "0"
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("listen on %s: %v (needs 127/8 loopback)", addr, err)
		}
		if port == "" {
			_, port, _ = net.SplitHostPort(ln.Addr().String())
		}
		s, err := sim.New(sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewUnstartedServer(s.Handler())
		hs.Listener.Close()
		hs.Listener = ln
		hs.Start()
		t.Cleanup(func() { s.Close(); hs.Close() })
		sims = append(sims, s)
	}
	return port, sims
}

// TestDiscoveryFollowsTheName: a dns+ endpoint is every address its name
// resolves to; resolved again, a replica that appeared gets the loaded
// adapter before it is used, one that went away is retired and its
// sessions move, with no restart.
func TestDiscoveryFollowsTheName(t *testing.T) {
	port, sims := loopbackSims(t, 3)
	res := &fakeResolver{addrs: map[string][]string{}}
	res.set("vllm.test", "127.0.0.1", "127.0.0.2")
	opts := testOptions("dns+http://vllm.test:" + port)
	opts.Resolver = res
	opts.SessionHeader = DefaultSessionHeader
	c := newTestClient(t, opts)
	want := func(addrs ...string) []string {
		var out []string
		for _, a := range addrs {
			out = append(out, "http://"+a+":"+port)
		}
		return out
	}
	if got := c.Endpoints(); !slices.Equal(got, want("127.0.0.1", "127.0.0.2")) {
		t.Fatalf("Endpoints() = %v, want %v", got, want("127.0.0.1", "127.0.0.2"))
	}
	ctx := context.Background()
	if err := c.LoadLoRA(ctx, "step-1", "/adapters/step-1"); err != nil {
		t.Fatal(err)
	}
	req := simpleRequest()
	req.Model, req.Prompt = "step-1", []int32{10, 11, 12}
	sessions := make([]context.Context, 8)
	for i := range sessions {
		sessions[i] = WithSession(ctx, Session{ID: fmt.Sprintf("r%d/a", i)})
		if _, err := c.Complete(sessions[i], req); err != nil {
			t.Fatal(err)
		}
	}
	if n := sims[0].Stats().Requests[sim.PathCompletions]; n == 0 {
		t.Fatalf("127.0.0.1 got no session; want them spread over both replicas")
	}

	res.set("vllm.test", "127.0.0.2", "127.0.0.3")
	c.Rediscover(ctx)
	if got := c.Endpoints(); !slices.Equal(got, want("127.0.0.2", "127.0.0.3")) {
		t.Fatalf("after the name changed, Endpoints() = %v, want %v", got, want("127.0.0.2", "127.0.0.3"))
	}
	if n := sims[2].Stats().Requests[sim.PathLoadLoRA]; n != 1 {
		t.Errorf("the new replica had %d adapter loads, want 1 before it took traffic", n)
	}
	first := sims[0].Stats().Requests[sim.PathCompletions]
	for _, s := range sessions {
		if _, err := c.Complete(s, req); err != nil {
			t.Fatalf("after rediscovery: %v", err)
		}
	}
	if n := sims[0].Stats().Requests[sim.PathCompletions]; n != first {
		t.Errorf("the retired replica got %d more completions, want none", n-first)
	}
	if n := sims[2].Stats().Requests[sim.PathCompletions]; n == 0 {
		t.Errorf("the new replica got no completion")
	}

	// A resolution that fails keeps the endpoints.
	res.mu.Lock()
	res.err = errors.New("server misbehaving")
	res.mu.Unlock()
	c.Rediscover(ctx)
	if got := c.Endpoints(); !slices.Equal(got, want("127.0.0.2", "127.0.0.3")) {
		t.Errorf("after a failed resolution, Endpoints() = %v, want the previous %v", got, want("127.0.0.2", "127.0.0.3"))
	}
}

// TestDiscoveryNameResolvesToNothing: New fails with one error naming the
// dns+ endpoint and the cause.
func TestDiscoveryNameResolvesToNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *fakeResolver
	}{
		{"no addresses", &fakeResolver{addrs: map[string][]string{}}},
		{"lookup error", &fakeResolver{err: &net.DNSError{Err: "no such host", Name: "vllm.test", IsNotFound: true}}},
	} {
		opts := testOptions("dns+http://vllm.test:8000")
		opts.Resolver = tc.res
		_, err := New(opts)
		if err == nil || !strings.Contains(err.Error(), `"dns+http://vllm.test:8000"`) || !strings.Contains(err.Error(), "resolves to no address") {
			t.Errorf("%s: New = %v, want an error naming the endpoint and that it resolves to no address", tc.name, err)
		}
	}
}
