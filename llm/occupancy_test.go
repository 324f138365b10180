package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestOccupancy integrates requests in flight over synthetic times: the
// integral is the count times the time it held, and the time at target is
// the time every slot was held.
func TestOccupancy(t *testing.T) {
	const s = int64(time.Second)
	for _, tc := range []struct {
		name     string
		changes  [][2]int64 // delta, at (seconds)
		readAt   int64
		wantReq  float64
		wantFull float64
	}{
		{"idle", nil, 10, 0, 0},
		{"one below target", [][2]int64{{1, 1}, {-1, 4}}, 10, 3, 0},
		{"at target", [][2]int64{{1, 0}, {1, 2}, {-1, 5}, {-1, 6}}, 10, 2 + 2*3 + 1, 3},
		{"still in flight at the read", [][2]int64{{1, 0}, {1, 1}}, 4, 1 + 2*3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o occupancy
			for _, c := range tc.changes {
				o.change(int(c[0]), 2, c[1]*s)
			}
			req, full := o.change(0, 2, tc.readAt*s)
			if req != tc.wantReq || full != tc.wantFull {
				t.Errorf("in flight %v request-seconds, at target %v s; want %v, %v", req, full, tc.wantReq, tc.wantFull)
			}
		})
	}
}

// TestStatsInFlight: the client's per-endpoint integrals move with real
// requests: one request alone never reaches a target of two, two held
// together do, and while at target both count.
func TestStatsInFlight(t *testing.T) {
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write(completionJSON(nil, 1, []int32{1}))
	}))
	defer srv.Close()
	opts := testOptions(srv.URL)
	opts.MaxConcurrentPerEndpoint = 2
	c := newTestClient(t, opts)
	send := func(n int) {
		arrived.Add(n)
		var done sync.WaitGroup
		for i := 0; i < n; i++ {
			done.Add(1)
			go func() {
				defer done.Done()
				if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
					t.Error(err)
				}
			}()
		}
		arrived.Wait()
		time.Sleep(20 * time.Millisecond)
		release <- struct{}{}
		if n == 2 {
			release <- struct{}{}
		}
		done.Wait()
	}
	send(1)
	one := c.Stats().Endpoints[0]
	if one.InFlightSeconds <= 0 || one.AtTargetSeconds != 0 {
		t.Fatalf("after one request: in flight %v request-s, at target %v s; want > 0 and 0", one.InFlightSeconds, one.AtTargetSeconds)
	}
	send(2)
	two := c.Stats().Endpoints[0]
	if two.AtTargetSeconds <= 0 || two.InFlightSeconds-one.InFlightSeconds < 2*two.AtTargetSeconds {
		t.Errorf("after two together: in flight %v request-s (%v before), at target %v s; want at target > 0 and the growth at least twice it",
			two.InFlightSeconds, one.InFlightSeconds, two.AtTargetSeconds)
	}
}
