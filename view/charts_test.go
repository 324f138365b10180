package view

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBuildCharts: metrics.jsonl's keys become the overview's charts:
// reward with its band, evaluation lines on their own charts, the
// trainer's, the judge's and the serving keys; an unfinished last line and
// a bad line are left out, the bad one named.
func TestBuildCharts(t *testing.T) {
	body := `{"step":1,"score_mean":2,"score_min":1,"score_max":3,"agreement_rate":0.5,"trainer/loss":0.9,"judge/latency_p50_s":1.5,"policy/prefix_cache_hit_rate":0.8,"policy/endpoint_load_max":3}
not json
{"step":2,"kind":"eval","eval/win_rate":60,"eval/score_mean":3.1,"eval/base_score_mean":2.5}
{"step":2,"score_mean":2.5,"score_min":1.5,"score_max":4,"agreement_rate":0.7,"trainer/loss":0.8,"trainer/empty_batch":0}
{"step":1,"kind":"audit","audit/train_score_mean":2,"audit/score_mean":3,"audit/exact":25,"audit/within_one":75,"audit/alarm":0}
{"step":3,"score_mean":`
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(path, []byte(body), 0o644)
	lines, bad, err := readMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 || bad == "" {
		t.Fatalf("readMetrics: %d lines, bad %q; want 4 and line 2 named", len(lines), bad)
	}
	charts := map[string]chart{}
	var order []string
	for _, c := range buildCharts(lines) {
		charts[c.ID] = c
		order = append(order, c.ID)
	}
	tests := []struct {
		id, group string
		points    int
	}{
		{"reward", "Training", 2}, {"agreement", "Training", 2}, {"eval_win_rate", "Evaluation", 1}, {"eval_score", "Evaluation", 1},
		{"prefix_cache", "Serving", 1}, {"load", "Serving", 1}, {"trainer/loss", "Trainer", 2}, {"judge/latency_p50_s", "Judge", 1},
		// The audit judge's line (judge.audit) charted at its step.
		{"audit_scores", "Judge", 1}, {"audit_agreement", "Judge", 1}, {"audit_alarm", "Judge", 1},
	}
	for _, tt := range tests {
		c, ok := charts[tt.id]
		if !ok || c.Group != tt.group || len(c.Series[0].Points) != tt.points {
			t.Errorf("chart %s: %+v, want in %s with %d points (charts %v)", tt.id, c, tt.group, tt.points, order)
		}
	}
	if b := charts["reward"].Band; b == nil || !slices.Equal(b.Points[1][:], []float64{2, 1.5, 4}) {
		t.Errorf("reward band = %+v, want step 2's min–max 1.5–4", b)
	}
	if _, ok := charts["trainer/empty_batch"]; ok {
		t.Error("trainer/empty_batch is charted")
	}
	if c := charts["audit_scores"]; len(c.Series) != 2 || c.Series[1].Points[0] != [2]float64{1, 3} {
		t.Errorf("audit_scores = %+v, want both judges, the audit judge's 3 at step 1", c)
	}
	if len(charts["eval_score"].Series) != 2 {
		t.Errorf("eval_score has %d series, want the adapter and the base", len(charts["eval_score"].Series))
	}
}
