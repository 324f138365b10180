package progress

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"
)

func TestPace(t *testing.T) {
	tests := []struct {
		name                 string
		base, current, total int64
		want                 string
	}{
		{"nothing done", 0, 0, 10, "–/s ETA –"},
		{"resumed, nothing new", 4, 4, 10, "–/s ETA –"},
		{"half at 1/s", 0, 5, 10, "1.00/s ETA 5s"},
		{"resumed counts only new work", 4, 9, 10, "1.00/s ETA 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pace{start: time.Now().Add(-5 * time.Second)}
			p.base.Store(tt.base)
			if got := p.String(tt.current, tt.total); got != tt.want {
				t.Errorf("String(%d, %d) = %q, want %q", tt.current, tt.total, got, tt.want)
			}
		})
	}
}

// fakeTerm reports a fixed size.
type fakeTerm struct {
	mpb.ConsoleWriter
	w, h int
	err  error
}

func (f fakeTerm) GetTermSize() (int, int, error) { return f.w, f.h, f.err }

func TestSizedWriterFallsBack(t *testing.T) {
	tests := []struct {
		name         string
		term         fakeTerm
		wantW, wantH int
	}{
		{"real size kept", fakeTerm{w: 132, h: 50}, 132, 50},
		{"0x0 pty", fakeTerm{}, 100, 24},
		{"error", fakeTerm{w: 80, h: 24, err: errors.New("not a tty")}, 100, 24},
	}
	for _, tt := range tests {
		w, h, err := sizedWriter{tt.term}.GetTermSize()
		if err != nil || w != tt.wantW || h != tt.wantH {
			t.Errorf("%s: GetTermSize = %d, %d, %v; want %d, %d", tt.name, w, h, err, tt.wantW, tt.wantH)
		}
	}
}

func TestDisabledBarsIgnoreCalls(t *testing.T) {
	b := New(false, nil)
	tick, end := b.Start("x", 3)
	tick()
	end(true)
	b.Add("y", 1).SetCurrent(1)
	b.Wait()
	b.Wait()
}

// TestWaitDrawsTheLastFrame: Wait draws the bars as they end, however soon
// after their last tick: a finished bar is gone from the last frame (no
// frozen "16/32" above a command's table), an unfinished one shows the
// count it reached.
func TestWaitDrawsTheLastFrame(t *testing.T) {
	tests := []struct {
		name      string
		ticks     int
		failed    bool
		want, not string
	}{
		{"finished", 32, false, "", "rollouts"},
		{"failed at 20", 20, true, "rollouts 20/32", "rollouts 0/32"},
		{"stopped at 7 without an end", 7, false, "rollouts 7/32", "rollouts 0/32"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		b := newTo(&out, nil)
		tick, end := b.Start("rollouts", 32)
		for range tt.ticks {
			tick()
		}
		if tt.failed {
			end(true)
		} else if tt.ticks == 32 {
			end(false)
		}
		b.Wait()
		frames := strings.Split(out.String(), "\x1b[J")
		last := frames[len(frames)-1]
		if tt.want != "" && !strings.Contains(last, tt.want) {
			t.Errorf("%s: last frame %q, want %q", tt.name, last, tt.want)
		}
		if strings.Contains(last, tt.not) {
			t.Errorf("%s: last frame %q has %q", tt.name, last, tt.not)
		}
	}
}
