package train

import (
	"os"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
)

// TestPercentile: nearest-rank quantiles of call latencies.
func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{"one", ms(7), 0.95, 7 * time.Millisecond},
		{"median of four", ms(40, 10, 30, 20), 0.5, 20 * time.Millisecond},
		{"p95 of twenty", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.95, 19 * time.Millisecond},
		{"p95 of ten is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 100), 0.95, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.ds, tt.q); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

// TestRecordedJudgeCost: a resumed run's judge cost goes on from the last
// total metrics.jsonl or a step's sidecar recorded; lines without one, or
// cut short, do not count.
func TestRecordedJudgeCost(t *testing.T) {
	tests := []struct {
		name, body string
		sidecar    string // step 3's sidecar ("": none)
		want       float64
	}{
		{"no file", "", "", 0},
		{"no price", `{"step":1,"judge/calls":16}` + "\n", "", 0},
		{"priced", `{"step":1,"judge/cost_usd":0.5,"judge/cost_usd_total":0.5}` + "\n" + `{"step":2,"kind":"eval","eval/win_rate":50}` + "\n" +
			`{"step":2,"judge/cost_usd":0.25,"judge/cost_usd_total":0.75}` + "\n", "", 0.75},
		{"torn last line", `{"step":1,"judge/cost_usd_total":0.5}` + "\n" + `{"step":2,"judge/cost_usd_total":0.9`, "", 0.5},
		{"a step judged, not recorded", `{"step":1,"judge/cost_usd_total":0.5}` + "\n", `{"metrics":{"step":2,"judge/cost_usd_total":0.8}}`, 0.8},
		{"a sidecar without cost", `{"step":1,"judge/cost_usd_total":0.5}` + "\n", `{"metrics":{"step":2}}`, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := dataset.RunDir(t.TempDir())
			if err := d.Create(); err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				if err := os.WriteFile(d.MetricsPath(), []byte(tt.body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.sidecar != "" {
				if err := os.WriteFile(d.SidecarPath(3), []byte(tt.sidecar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := recordedJudgeCost(d)
			if err != nil || got != tt.want {
				t.Errorf("recordedJudgeCost = %v, %v, want %v", got, err, tt.want)
			}
		})
	}
}
