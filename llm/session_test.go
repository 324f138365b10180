package llm

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// sessionLog records, per fake endpoint, the session header of every
// completion it was sent.
type sessionLog struct {
	mu  sync.Mutex
	got map[string][]int // session id → endpoint index of each request
}

func (l *sessionLog) watch(i int, f *fakeVLLM, next func(w http.ResponseWriter, r *http.Request, hit int64) bool) {
	f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
		if r.URL.Path == pathCompletions {
			l.mu.Lock()
			if l.got == nil {
				l.got = map[string][]int{}
			}
			id := r.Header.Get(DefaultSessionHeader)
			l.got[id] = append(l.got[id], i)
			l.mu.Unlock()
		}
		return next != nil && next(w, r, hit)
	}
}

func (l *sessionLog) endpoints(id string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.got[id]...)
}

func sessionFakes(t *testing.T, n int) ([]*fakeVLLM, []string, *sessionLog) {
	var fs []*fakeVLLM
	var urls []string
	log := &sessionLog{}
	for i := 0; i < n; i++ {
		f := newFakeVLLM(t)
		log.watch(i, f, nil)
		fs = append(fs, f)
		urls = append(urls, f.srv.URL)
	}
	return fs, urls, log
}

func sessionCtx(id, group string) context.Context {
	return WithSession(context.Background(), Session{ID: id, Group: group})
}

// TestSessionAffinity: every turn of a session goes where its first went,
// the header names it, and sessions spread over the endpoints.
func TestSessionAffinity(t *testing.T) {
	_, urls, log := sessionFakes(t, 4)
	opts := testOptions(urls...)
	opts.SessionHeader = DefaultSessionHeader
	c := newTestClient(t, opts)
	const sessions, turns = 16, 5
	var wg sync.WaitGroup
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := sessionCtx(fmt.Sprintf("r%02d/a", s), "")
			for range turns {
				if _, err := c.Complete(ctx, simpleRequest()); err != nil {
					t.Errorf("Complete = %v", err)
				}
			}
		}()
	}
	wg.Wait()
	perEndpoint := make([]int, len(urls))
	for s := 0; s < sessions; s++ {
		id := fmt.Sprintf("r%02d/a", s)
		eps := log.endpoints(id)
		if len(eps) != turns {
			t.Fatalf("session %s: %d requests carried its header, want %d", id, len(eps), turns)
		}
		for _, e := range eps {
			if e != eps[0] {
				t.Errorf("session %s went to endpoints %v, want one", id, eps)
				break
			}
		}
		perEndpoint[eps[0]]++
	}
	for i, n := range perEndpoint {
		if n < 2 || n > 6 {
			t.Errorf("endpoint %d homes %d of %d sessions (all: %v), want about %d", i, n, sessions, perEndpoint, sessions/len(urls))
		}
	}
	if st := c.Sessions(); st.Moves != 0 || st.Live != sessions || st.Started != sessions {
		t.Errorf("Sessions() = %+v, want %d live and started, no moves", st, sessions)
	}
	c.EndSession("r00/a")
	if st := c.Sessions(); st.Live != sessions-1 {
		t.Errorf("after EndSession: %d live, want %d", st.Live, sessions-1)
	}
}

// TestSessionHeader: the header is sent under the configured name, not
// at all when the name is empty, and never for requests without a session.
func TestSessionHeader(t *testing.T) {
	for _, tc := range []struct {
		header, session, want string
	}{
		{DefaultSessionHeader, "r1/a", "r1/a"},
		{"X-Other", "r1/a", "r1/a"},
		{"", "r1/a", ""},
		{DefaultSessionHeader, "", ""},
		{DefaultSessionHeader, "bad\nid", ""},
	} {
		f := newFakeVLLM(t)
		var got string
		f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
			if tc.header != "" {
				got = r.Header.Get(tc.header)
			}
			return false
		}
		opts := testOptions(f.srv.URL)
		opts.SessionHeader = tc.header
		c := newTestClient(t, opts)
		if _, err := c.Complete(sessionCtx(tc.session, ""), simpleRequest()); err != nil {
			t.Fatalf("Complete = %v", err)
		}
		if got != tc.want {
			t.Errorf("header %q, session %q: server saw %q, want %q", tc.header, tc.session, got, tc.want)
		}
	}
}

// TestSessionGroupStartsTogether: a group's first turns go where its first
// session went while the endpoint is within the bound.
func TestSessionGroupStartsTogether(t *testing.T) {
	_, urls, log := sessionFakes(t, 4)
	opts := testOptions(urls...)
	opts.SessionHeader = DefaultSessionHeader
	opts.SessionBound = 10 // loose: the group fits on one endpoint
	c := newTestClient(t, opts)
	for i := 0; i < 4; i++ {
		if _, err := c.Complete(sessionCtx(fmt.Sprintf("g1-%d/a", i), "g1"), simpleRequest()); err != nil {
			t.Fatal(err)
		}
	}
	first := log.endpoints("g1-0/a")[0]
	for i := 1; i < 4; i++ {
		if e := log.endpoints(fmt.Sprintf("g1-%d/a", i)); e[0] != first {
			t.Errorf("session %d of the group went to endpoint %d, the group's first to %d", i, e[0], first)
		}
	}
}

// TestSessionBoundedMove: a session leaves its endpoint only when the
// endpoint's slots are full and it is past the bound, and goes to the
// least-loaded endpoint. Requests held on the endpoints (4 slots each) make
// the load; the routing decision for the session's next turn is read.
func TestSessionBoundedMove(t *testing.T) {
	for _, tc := range []struct {
		name     string
		busy     int     // requests held on the session's endpoint
		others   int     // requests held on each other endpoint
		bound    float64 // ε
		wantMove bool
	}{
		{"idle", 0, 0, 0.25, false},
		{"within the bound", 3, 2, 0.25, false},
		{"past the bound", 8, 0, 0.25, true},
		{"past a tight bound", 4, 2, 0.1, true},
		{"saturated everywhere: stays", 6, 6, 0.25, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, urls, log := sessionFakes(t, 3)
			release := make(chan struct{})
			for i, f := range fs {
				log.watch(i, f, func(w http.ResponseWriter, r *http.Request, hit int64) bool {
					if r.Header.Get("X-Hold") != "" {
						select {
						case <-release:
						case <-r.Context().Done():
						}
					}
					return false
				})
			}
			opts := testOptions(urls...)
			opts.SessionHeader = DefaultSessionHeader
			opts.SessionBound = tc.bound
			opts.MaxConcurrentPerEndpoint = 4
			c := newTestClient(t, opts)
			ctx := sessionCtx("s/a", "")
			if _, err := c.Complete(ctx, simpleRequest()); err != nil {
				t.Fatal(err)
			}
			home := log.endpoints("s/a")[0]
			// Hold requests on the endpoints, pinned, so they count as
			// outstanding load.
			var wg sync.WaitGroup
			hold := func(ep *endpoint, n int) {
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c.do(context.Background(), &call{method: http.MethodPost, path: pathCompletions, pin: ep, slot: true,
							body: []byte(`{"prompt":[1]}`), header: "X-Hold: 1\r\n", maxAttempts: 1})
					}()
				}
			}
			for i, ep := range c.endpoints() {
				if i == home {
					hold(ep, tc.busy)
				} else {
					hold(ep, tc.others)
				}
			}
			want := int64(tc.busy + tc.others*2)
			waitFor(t, "held requests", func() bool {
				var n int64
				for _, ep := range c.endpoints() {
					n += ep.outstanding.Load()
				}
				return n == want
			})
			next := c.pickSession(Session{ID: "s/a"}, nil)
			least := true
			for _, ep := range c.endpoints() {
				if ep != c.endpoints()[home] && ep.outstanding.Load() < next.outstanding.Load() {
					least = false
				}
			}
			close(release)
			wg.Wait()
			if moved := next != c.endpoints()[home]; moved != tc.wantMove {
				t.Errorf("second turn goes to %s (home %s): moved = %v, want %v", next.name, c.endpoints()[home].name, moved, tc.wantMove)
			}
			if tc.wantMove && !least {
				t.Errorf("moved to %s, not the least-loaded endpoint", next.name)
			}
			if got := c.Sessions().Moves; (got == 1) != tc.wantMove {
				t.Errorf("Moves = %d, want moved = %v", got, tc.wantMove)
			}
		})
	}
}

// TestSessionsWaitWhenSaturated: with every endpoint's concurrency slots
// taken, sessions' requests wait for a slot on their own endpoint: none
// fails, none is retried, none moves.
func TestSessionsWaitWhenSaturated(t *testing.T) {
	fs, urls, log := sessionFakes(t, 2)
	for _, f := range fs {
		f.delay = 20 * time.Millisecond
	}
	opts := testOptions(urls...)
	opts.SessionHeader = DefaultSessionHeader
	opts.MaxConcurrentPerEndpoint = 1
	c := newTestClient(t, opts)
	const sessions, turns = 8, 3
	var wg sync.WaitGroup
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := sessionCtx(fmt.Sprintf("r%d/a", s), "")
			for range turns {
				if _, err := c.Complete(ctx, simpleRequest()); err != nil {
					t.Errorf("Complete = %v", err)
				}
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	if st.Retries != 0 || st.Failures != 0 || st.Attempts != sessions*turns {
		t.Errorf("Stats = %d attempts, %d retries, %d failures; want %d attempts, none retried or failed", st.Attempts, st.Retries, st.Failures, sessions*turns)
	}
	for f := range fs {
		if m := fs[f].maxInflight.Load(); m > 1 {
			t.Errorf("endpoint %d had %d requests in flight, want at most its 1 slot", f, m)
		}
	}
	for s := 0; s < sessions; s++ {
		eps := log.endpoints(fmt.Sprintf("r%d/a", s))
		for _, e := range eps {
			if e != eps[0] {
				t.Errorf("session %d went to %v under saturation, want one endpoint", s, eps)
				break
			}
		}
	}
}

// TestSessionMovesOffFailedEndpoint: an endpoint that stops answering
// mid-dialogue loses its sessions to the others; every turn completes
// exactly once.
func TestSessionMovesOffFailedEndpoint(t *testing.T) {
	fs, urls, log := sessionFakes(t, 2)
	opts := testOptions(urls...)
	opts.SessionHeader = DefaultSessionHeader
	c := newTestClient(t, opts)
	ctx := sessionCtx("s/a", "")
	if _, err := c.Complete(ctx, simpleRequest()); err != nil {
		t.Fatal(err)
	}
	home := log.endpoints("s/a")[0]
	fs[home].srv.CloseClientConnections()
	fs[home].srv.Close()
	for turn := 2; turn <= 4; turn++ {
		if _, err := c.Complete(ctx, simpleRequest()); err != nil {
			t.Fatalf("turn %d: Complete = %v", turn, err)
		}
	}
	eps := log.endpoints("s/a")
	if len(eps) != 4 {
		t.Fatalf("the session's requests reached %v, want 4 answered", eps)
	}
	for _, e := range eps[1:] {
		if e == home {
			t.Errorf("turns went to %v after endpoint %d closed", eps, home)
		}
	}
	if fs[1-home].hits.Load() != 3 {
		t.Errorf("the other endpoint answered %d completions, want 3", fs[1-home].hits.Load())
	}
	if got := c.Sessions().Moves; got != 1 {
		t.Errorf("Moves = %d, want 1 (one move, then it stays)", got)
	}
}
