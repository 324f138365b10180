package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/parleyhq/parley/sim"
)

// simAt serves a new serve-sim at addr ("127.0.0.1:0": any port) and
// returns it, its URL and a function that stops it.
func simAt(t *testing.T, addr string) (*sim.Server, string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	stop := func() { hs.Close(); s.Close() }
	t.Cleanup(stop)
	return s, hs.URL, stop
}

// TestLostEndpointComesBack (issue 28, item 10): a static endpoint that an
// adapter load cannot reach, while the other loads it, is lost instead of
// stopping the run: out of rotation, listed by Lost and Stats, and taken
// back, with every adapter loaded, once it answers again.
func TestLostEndpointComesBack(t *testing.T) {
	_, urlA, _ := simAt(t, "127.0.0.1:0")
	_, urlB, stopB := simAt(t, "127.0.0.1:0")
	c := newTestClient(t, testOptions(urlA, urlB))
	ctx := context.Background()
	if err := c.LoadLoRA(ctx, "step-1", "/adapters/step-1"); err != nil {
		t.Fatal(err)
	}
	stopB()
	if err := c.LoadLoRA(ctx, "step-2", "/adapters/step-2"); err != nil {
		t.Fatalf("LoadLoRA with one of two endpoints gone = %v, want it loaded on the other and the run going on", err)
	}
	if got := c.Endpoints(); !slices.Equal(got, []string{urlA}) {
		t.Errorf("Endpoints() = %v, want only %s", got, urlA)
	}
	if got := c.Stats().Lost; !slices.Equal(got, []string{urlB}) {
		t.Errorf("Stats().Lost = %v, want [%s]", got, urlB)
	}
	req := simpleRequest()
	req.Model = "step-2"
	for range 4 {
		if _, err := c.Complete(ctx, req); err != nil {
			t.Fatalf("a completion with the endpoint lost: %v", err)
		}
	}

	c.Rediscover(ctx) // still gone
	if got := c.Lost(); !slices.Equal(got, []string{urlB}) {
		t.Fatalf("while it is down, Lost() = %v, want [%s]", got, urlB)
	}
	simB, _, _ := simAt(t, urlB[len("http://"):]) // restarted, no adapter
	c.Rediscover(ctx)
	if got := c.Endpoints(); !slices.Equal(got, []string{urlA, urlB}) || len(c.Lost()) != 0 {
		t.Fatalf("after it came back, Endpoints() = %v, Lost() = %v; want both in rotation, none lost", got, c.Lost())
	}
	if n := simB.Stats().Requests[sim.PathLoadLoRA]; n != 2 {
		t.Errorf("the endpoint came back with %d adapter loads, want 2 (step-1 and step-2) before any traffic", n)
	}
	for range 4 {
		if _, err := c.Complete(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if n := simB.Stats().Requests[sim.PathCompletions]; n == 0 {
		t.Error("the endpoint taken back got no completion")
	}
}

// TestLostEndpointNotLost: an endpoint is lost only when it could not be
// reached while another loaded the adapter; otherwise LoadLoRA fails as
// before, and nothing is lost.
func TestLostEndpointNotLost(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"object":"error","message":"LoRA rank 64 is greater than max_lora_rank 16.","type":"BadRequestError","code":400}`))
	}))
	t.Cleanup(refusing.Close)
	for _, tc := range []struct {
		name string
		eps  []string // "sim", "gone" (a serve-sim stopped), "refusing" (answers with an error)
	}{
		{"every endpoint gone", []string{"gone", "gone"}},
		{"one answers with an error", []string{"sim", "refusing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			for _, kind := range tc.eps {
				if kind == "refusing" {
					urls = append(urls, refusing.URL)
					continue
				}
				_, u, stop := simAt(t, "127.0.0.1:0")
				if kind == "gone" {
					stop()
				}
				urls = append(urls, u)
			}
			c := newTestClient(t, testOptions(urls...))
			if err := c.LoadLoRA(context.Background(), "step-1", "/adapters/step-1"); err == nil {
				t.Error("LoadLoRA = nil error, want the failure")
			}
			if got := c.Endpoints(); !slices.Equal(got, urls) || len(c.Lost()) != 0 {
				t.Errorf("Endpoints() = %v, Lost() = %v; want every endpoint kept, none lost", got, c.Lost())
			}
		})
	}
}

// TestLostDiscoveredEndpoint: a dns+ replica lost by an adapter load is
// dropped from Lost once its name no longer resolves to it, rather than
// asked to come back for ever.
func TestLostDiscoveredEndpoint(t *testing.T) {
	_, urlA, _ := simAt(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(urlA[len("http://"):])
	_, urlB, stopB := simAt(t, "127.0.0.2:"+port)
	res := &fakeResolver{addrs: map[string][]string{}}
	res.set("vllm.test", "127.0.0.1", "127.0.0.2")
	opts := testOptions("dns+http://vllm.test:" + port)
	opts.Resolver = res
	c := newTestClient(t, opts)
	ctx := context.Background()
	stopB()
	if err := c.LoadLoRA(ctx, "step-1", "/adapters/step-1"); err != nil {
		t.Fatal(err)
	}
	if got := c.Lost(); !slices.Equal(got, []string{urlB}) {
		t.Fatalf("Lost() = %v, want [%s]", got, urlB)
	}
	c.Rediscover(ctx) // still resolved, still down
	if got := c.Lost(); !slices.Equal(got, []string{urlB}) || !slices.Equal(c.Endpoints(), []string{urlA}) {
		t.Fatalf("still resolved and down: Lost() = %v, Endpoints() = %v", got, c.Endpoints())
	}
	res.set("vllm.test", "127.0.0.1")
	c.Rediscover(ctx)
	if got := c.Lost(); len(got) != 0 || !slices.Equal(c.Endpoints(), []string{urlA}) {
		t.Errorf("after its name stopped resolving to it: Lost() = %v, Endpoints() = %v; want none lost, [%s]", got, c.Endpoints(), urlA)
	}
}
