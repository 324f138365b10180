package train

import (
	"context"
	"sync"

	"go.uber.org/zap"
)

// CrossPlayOptions run cross-play among the run's checkpoints beside
// training (train.crossplay_every): every Every-th step, Play plays the
// checkpoints up to the step against each other, on endpoints of its own
// so that weight updates never abort its games. One runs at a time; a step
// reached while one runs waits, and only the newest waiting step is
// played (each covers every checkpoint before it). Play resumes what a
// killed run left (the tournament engine), so a resumed run queues the
// newest multiple of Every already trained again. A failure is a warning:
// training goes on.
type CrossPlayOptions struct {
	Every int
	Play  func(ctx context.Context, step int) error
}

// crossPlayer is the cross-play runner of one Run.
type crossPlayer struct {
	opts    CrossPlayOptions
	log     *zap.Logger
	mu      sync.Mutex
	pending int // the newest step waiting, 0 for none
	wake    chan struct{}
	stop    chan struct{} // closed when training is done: play what waits, then end
	done    chan struct{}
	cancel  context.CancelFunc
}

// startCrossPlay starts the runner, queueing the newest multiple of Every
// already trained (completed).
func startCrossPlay(ctx context.Context, o CrossPlayOptions, completed int, log *zap.Logger) *crossPlayer {
	if o.Every <= 0 || o.Play == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &crossPlayer{opts: o, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	go c.work(ctx)
	if last := completed / o.Every * o.Every; last > 0 {
		c.queue(last)
	}
	return c
}

// queue asks for cross-play up to step when step is a multiple of Every.
func (c *crossPlayer) queue(step int) {
	if c == nil || step%c.opts.Every != 0 {
		return
	}
	c.mu.Lock()
	c.pending = max(c.pending, step)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *crossPlayer) work(ctx context.Context) {
	defer close(c.done)
	for {
		stopping := false
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-c.stop:
			stopping = true
		}
		for ctx.Err() == nil {
			c.mu.Lock()
			step := c.pending
			c.pending = 0
			c.mu.Unlock()
			if step == 0 {
				break
			}
			c.log.Info("cross-play", zap.Int("up_to_step", step))
			if err := c.opts.Play(ctx, step); err != nil && ctx.Err() == nil {
				c.log.Warn("cross-play failed; training goes on", zap.Int("up_to_step", step), zap.Error(err))
			}
		}
		if stopping {
			return
		}
	}
}

// finish waits for the cross-play queued when training succeeded, or
// cancels it when it failed.
func (c *crossPlayer) finish(failed bool) {
	if c == nil {
		return
	}
	if failed {
		c.cancel()
	} else {
		close(c.stop)
	}
	<-c.done
	c.cancel()
}
