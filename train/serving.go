package train

import (
	"context"
	"sync"
	"time"

	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/rollout"
)

// DefaultServingSampleEvery is how often the loop reads the policy
// endpoints' requests running (vllm:num_requests_running) by default.
const DefaultServingSampleEvery = 2 * time.Second

// servingSampler reads the requests the policy's endpoints report running
// (vllm:num_requests_running, summed over endpoints) every period while
// the run goes on, so that a step's line can say how busy the servers
// were: the mean and the least of the readings since the step before.
type servingSampler struct {
	mu       sync.Mutex
	n        int
	sum, min float64
	stop     context.CancelFunc
	done     chan struct{}
}

// startServingSampler starts reading policy's endpoints every period; nil
// when the policy reports no server metrics (not a rollout.Routing) or
// period is negative.
func startServingSampler(ctx context.Context, policy rollout.Policy, period time.Duration) *servingSampler {
	rt, ok := policy.(rollout.Routing)
	if !ok || period < 0 {
		return nil
	}
	if period == 0 {
		period = DefaultServingSampleEvery
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &servingSampler{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ms, _ := rt.Metrics(ctx)
			running, read := 0.0, false
			for _, m := range ms {
				if m.Err == nil {
					running += m.Running
					read = true
				}
			}
			if read {
				s.add(running)
			}
		}
	}()
	return s
}

// add records one reading.
func (s *servingSampler) add(running float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 || running < s.min {
		s.min = running
	}
	s.n++
	s.sum += running
}

// drain adds the readings since the last drain to m (none: nothing) and
// starts anew.
func (s *servingSampler) drain(m metrics.Line) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n > 0 {
		m[metrics.KeyServerRunningMean] = s.sum / float64(s.n)
		m[metrics.KeyServerRunningMin] = s.min
		m[metrics.KeyServerRunningSamples] = s.n
	}
	s.n, s.sum, s.min = 0, 0, 0
}

// close stops the readings.
func (s *servingSampler) close() {
	if s == nil {
		return
	}
	s.stop()
	<-s.done
}
