package train_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestOverOptimised: the alarm fires only when the training judge's mean
// rises by the threshold while the audit judge's falls by it, over the
// window's halves.
func TestOverOptimised(t *testing.T) {
	tests := []struct {
		name         string
		train, audit []float64
		want         bool
	}{
		{"diverging", []float64{3, 3, 3.5, 3.5}, []float64{3, 3, 2.6, 2.6}, true},
		{"both rise", []float64{3, 3, 3.5, 3.5}, []float64{3, 3, 3.4, 3.4}, false},
		{"train flat", []float64{3, 3, 3.1, 3.1}, []float64{3, 3, 2, 2}, false},
		{"audit falls too little", []float64{3, 3, 4, 4}, []float64{3, 3, 2.8, 2.8}, false},
		{"exactly the threshold", []float64{3, 3.3}, []float64{3, 2.7}, true},
		{"odd window", []float64{3, 3, 4}, []float64{3, 3, 2}, false},
		{"too short", []float64{3}, []float64{2}, false},
		{"lengths differ", []float64{3, 4}, []float64{3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := train.OverOptimised(tt.train, tt.audit, 0.3); got != tt.want {
				t.Errorf("OverOptimised(%v, %v) = %v, want %v", tt.train, tt.audit, got, tt.want)
			}
		})
	}
}

// simJudge is a CA judge on a serve-sim of its own, made with o.
func simJudge(t *testing.T, o sim.Options, copts chat.Options) reward.Judge {
	t.Helper()
	s, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return caJudgeAt(t, ts.URL, copts)
}

// caJudgeAt is a CA judge on the chat API at url.
func caJudgeAt(t *testing.T, url string, copts chat.Options) reward.Judge {
	t.Helper()
	copts.BaseURL, copts.Model = url+"/v1", "gpt-audit"
	if copts.Retry.BackoffBase == 0 {
		copts.Retry = retry.Policy{BackoffBase: time.Millisecond, MaxRetries: 1, AfterMax: time.Millisecond}
	}
	c, err := chat.New(copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return reward.NewCAJudge(c)
}

// auditLines are the audit lines of metrics.jsonl, by step.
func auditLines(t *testing.T, dir dataset.RunDir) map[int]map[string]any {
	t.Helper()
	out := map[int]map[string]any{}
	for _, m := range readMetrics(t, dir) {
		if m["kind"] == metrics.AuditKind {
			s := int(m["step"].(float64))
			if out[s] != nil {
				t.Fatalf("step %d has two audit lines", s)
			}
			out[s] = m
		}
	}
	return out
}

// TestLoopAudit trains 6 steps on serve-sim whose adapters learn to write
// more Collective-Agency sentences (sim's AdapterCAGain), judged by the CA
// judge, with an audit judge on a serve-sim of its own scoring half of
// each step's finals:
//   - agreeing: the audit judge scores as the training judge does: every
//     step audited, exact agreement 100 %, both means equal, no alarm;
//   - diverging: the audit judge scores 6 minus the rubric score
//     (serve-sim --judge-diverge): its mean falls as training's rises, the
//     alarm fires and is warned each time it starts firing;
//   - down, rate-limited, garbage: the audit judge fails on everything;
//     training still completes every step, each step's failures are
//     counted, the cause is warned once, and no agreement is written.
func TestLoopAudit(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // connection refused
	tests := []struct {
		name      string
		audit     func(t *testing.T) reward.Judge
		wantExact float64 // -1: none (every audit failed)
		wantAlarm bool
		wantCause string
	}{
		{name: "agreeing", audit: func(t *testing.T) reward.Judge { return simJudge(t, sim.Options{}, chat.Options{}) }, wantExact: 100},
		{name: "diverging", audit: func(t *testing.T) reward.Judge {
			return simJudge(t, sim.Options{JudgeDiverge: true}, chat.Options{})
		}, wantExact: -2, wantAlarm: true},
		{name: "down", audit: func(t *testing.T) reward.Judge { return caJudgeAt(t, closed.URL, chat.Options{}) },
			wantExact: -1, wantCause: "connection"},
		{name: "rate-limited", audit: func(t *testing.T) reward.Judge {
			return simJudge(t, sim.Options{RateLimitRate: 1, RetryAfter: time.Millisecond}, chat.Options{})
		}, wantExact: -1, wantCause: "rate limited (HTTP 429)"},
		{name: "garbage", audit: func(t *testing.T) reward.Judge {
			return simJudge(t, sim.Options{JudgeMalformedRate: 1}, chat.Options{})
		}, wantExact: -1, wantCause: "no valid verdict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, err := sim.New(sim.Options{AdapterCAGain: 0.1})
			if err != nil {
				t.Fatal(err)
			}
			pts := httptest.NewServer(policy.Handler())
			defer pts.Close()
			judge := caJudgeAt(t, pts.URL, chat.Options{})
			core, logs := observer.New(zap.WarnLevel)
			dir := dataset.RunDir(t.TempDir())
			const steps = 6
			var onAudit []int
			if _, err := trained(t, dir, pts.URL, steps, 0, func(o *train.LoopOptions) {
				o.Judge, o.Logger = judge, zap.New(core)
				o.Audit = train.AuditOptions{Judge: tt.audit(t), Share: 0.5, Seed: 3, Concurrency: 4, Window: 4, Threshold: 0.3,
					OnAudit: func(m map[string]any) { onAudit = append(onAudit, m["step"].(int)) }}
			}); err != nil {
				t.Fatal(err)
			}
			steps6 := []int{1, 2, 3, 4, 5, 6}
			if got := stepsOf(stepLines(t, dir)); !slices.Equal(got, steps6) {
				t.Fatalf("step lines %v, want 1..6: the audit must never stop training", got)
			}
			if !slices.Equal(onAudit, steps6) {
				t.Errorf("OnAudit called for %v, want 1..6 in order", onAudit)
			}
			lines := auditLines(t, dir)
			var trainMeans, auditMeans []float64
			alarms, episodes, prev := 0, 0, false
			for s := 1; s <= steps; s++ {
				m := lines[s]
				if m == nil {
					t.Fatalf("no audit line for step %d", s)
				}
				rec := readAudit(t, dir, s)
				if m["audit/sampled"] != float64(8) || len(rec.Items) != 8 {
					t.Errorf("step %d: sampled %v (record %d), want 8 (half of 16)", s, m["audit/sampled"], len(rec.Items))
				}
				if tt.wantExact == -1 {
					if m["audit/failed"] != float64(8) || m["audit/exact"] != nil || rec.Agreement != nil {
						t.Errorf("step %d: failed %v exact %v, want 8 failed and no agreement", s, m["audit/failed"], m["audit/exact"])
					}
					for _, it := range rec.Items {
						if it.Cause != tt.wantCause || it.AuditScore != nil {
							t.Fatalf("step %d: item %+v, want cause %q", s, it, tt.wantCause)
						}
					}
					continue
				}
				if m["audit/failed"] != float64(0) {
					t.Errorf("step %d: %v audit failures, want none", s, m["audit/failed"])
				}
				if tt.wantExact >= 0 && m["audit/exact"] != tt.wantExact {
					t.Errorf("step %d: exact agreement %v, want %v", s, m["audit/exact"], tt.wantExact)
				}
				trainMeans = append(trainMeans, m["audit/train_score_mean"].(float64))
				auditMeans = append(auditMeans, m["audit/score_mean"].(float64))
				on := m["audit/alarm"] == float64(1)
				if on {
					alarms++
				}
				if on && !prev {
					episodes++
				}
				prev = on
			}
			warns := logs.FilterMessageSnippet("over-optimisation alarm").Len()
			if tt.wantAlarm != (alarms > 0) || warns != episodes {
				t.Errorf("alarm on %d steps, warned %d times (train means %v, audit means %v); want alarm %v, warned once each time it starts firing (%d)",
					alarms, warns, trainMeans, auditMeans, tt.wantAlarm, episodes)
			}
			if tt.name == "agreeing" && !slices.Equal(trainMeans, auditMeans) {
				t.Errorf("train means %v, audit means %v: the same scorer must give the same means", trainMeans, auditMeans)
			}
			if tt.wantExact != -1 {
				// The trainer's reporters get the audits in later sidecars.
				handed := 0
				for s := 2; s <= steps; s++ {
					for _, ev := range sidecarEvals(t, dir, s) {
						if v, ok := ev.Metrics[string(metrics.KeyAuditExact)]; ok {
							handed++
							if ev.Step >= s || v != lines[ev.Step][string(metrics.KeyAuditExact)] {
								t.Errorf("step %d's sidecar hands %+v, want an earlier step's audit as its line has it", s, ev)
							}
						}
					}
				}
				if handed == 0 {
					t.Error("no audit reached the trainer's reporters through a sidecar")
				}
			}
			if tt.wantCause != "" {
				if n := logs.FilterMessageSnippet("the audit judge failed").FilterField(zap.String("cause", tt.wantCause)).Len(); n != 1 {
					t.Errorf("cause %q warned %d times, want once", tt.wantCause, n)
				}
			}
		})
	}
}

// stepLines are metrics.jsonl's step lines.
func stepLines(t *testing.T, dir dataset.RunDir) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range readMetrics(t, dir) {
		if m["kind"] == nil {
			out = append(out, m)
		}
	}
	return out
}

// readAudit reads step's audit record.
func readAudit(t *testing.T, dir dataset.RunDir, step int) train.AuditRecord {
	t.Helper()
	b, err := os.ReadFile(dir.AuditPath(step))
	if err != nil {
		t.Fatal(err)
	}
	var rec train.AuditRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestAuditResume: a run stopped before step 2's audit record and after
// step 3's record but before its line audits step 2 on resume and appends
// step 3's line, once each; the run being complete trains nothing again.
func TestAuditResume(t *testing.T) {
	url := simURL(t)
	judge := caJudgeAt(t, url, chat.Options{})
	audit := simJudge(t, sim.Options{}, chat.Options{})
	dir := dataset.RunDir(t.TempDir())
	edit := func(o *train.LoopOptions) {
		o.Judge = judge
		o.Audit = train.AuditOptions{Judge: audit, Share: 0.25, Seed: 1, Window: 2, Threshold: 0.3}
	}
	if _, err := trained(t, dir, url, 3, 0, edit); err != nil {
		t.Fatal(err)
	}
	want := readAudit(t, dir, 2)
	if err := os.Remove(dir.AuditPath(2)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dir.MetricsPath())
	var kept []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.Contains(line, `"kind":"audit"`) && (strings.Contains(line, `"step":2`) || strings.Contains(line, `"step":3`)) {
			continue
		}
		kept = append(kept, line)
	}
	if err := os.WriteFile(dir.MetricsPath(), []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trained(t, dir, url, 3, 0, edit); err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, dir)
	if len(lines) != 3 || lines[2] == nil || lines[3] == nil {
		t.Fatalf("audit lines for steps %v, want 1, 2 and 3 once each", lines)
	}
	got := readAudit(t, dir, 2)
	if len(got.Items) != len(want.Items) || got.Items[0].RolloutID != want.Items[0].RolloutID {
		t.Errorf("re-audited step 2 drew %+v, want the same seeded sample %+v", got.Items, want.Items)
	}
	if n := len(stepLines(t, dir)); n != 3 {
		t.Errorf("%d step lines, want 3: the resume must train nothing again", n)
	}
}

// TestAuditNeverBlocks: an audit judge that hangs does not hold training
// up: every step is trained, and the run ends after the drain bound,
// leaving the steps unaudited for a resume.
func TestAuditNeverBlocks(t *testing.T) {
	hang := make(chan struct{})
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer hts.Close()
	defer close(hang)
	url := simURL(t)
	judge := caJudgeAt(t, url, chat.Options{})
	audit := caJudgeAt(t, hts.URL, chat.Options{Timeout: time.Hour})
	core, logs := observer.New(zap.WarnLevel)
	dir := dataset.RunDir(t.TempDir())
	if _, err := trained(t, dir, url, 3, 0, func(o *train.LoopOptions) {
		o.Judge, o.Logger = judge, zap.New(core)
		o.Audit = train.AuditOptions{Judge: audit, Share: 0.25, Window: 2, Threshold: 0.3, Drain: 100 * time.Millisecond}
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(stepLines(t, dir)); n != 3 {
		t.Fatalf("%d step lines, want 3", n)
	}
	if n := len(auditLines(t, dir)); n != 0 {
		t.Errorf("%d audit lines, want none from a judge that never answers", n)
	}
	if logs.FilterMessageSnippet("audits not finished").Len() != 1 {
		t.Errorf("want one warning that the audits were left for a resume")
	}
}

// sidecarEvals are the evaluations (and audits) step's sidecar hands the
// trainer's reporters.
func sidecarEvals(t *testing.T, dir dataset.RunDir, step int) []train.EvalReport {
	t.Helper()
	b, err := os.ReadFile(dir.SidecarPath(step))
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Metrics struct {
			Evals []train.EvalReport `json:"evals"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	return sc.Metrics.Evals
}
