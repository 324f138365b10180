package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/stats"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReadMetrics(t *testing.T) {
	m, err := ReadMetrics("testdata/run/quickstart/metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 120 || m.Steps[0] != 1 || m.Steps[119] != 120 {
		t.Errorf("ReadMetrics: %d steps %v…, want 1..120", len(m.Steps), m.Steps[:3])
	}
	// Step 30 merges the orchestrator's and the trainer's lines.
	row := m.Rows[29]
	if row["loss"] != 0.125 || row["score_min"] != 1.987 || row["timings/rollout_s"] != 12.5 {
		t.Errorf("step 30 = %v, want merged loss, score_min and flattened timings", row)
	}
	if _, ok := row["run_id"]; ok {
		t.Errorf("string value kept as a metric: %v", row)
	}
	wantNotes := []string{
		`metrics.jsonl line 64: not a JSON object, skipped`,
		`metrics.jsonl line 97: no integer "step", skipped`,
	}
	if strings.Join(m.Notes, "\n") != strings.Join(wantNotes, "\n") {
		t.Errorf("Notes = %q, want %q", m.Notes, wantNotes)
	}
	x, y := m.Series("eval/score_mean")
	if len(x) != 6 || x[0] != 20 || x[5] != 120 || y[5] != 3.4 {
		t.Errorf("Series(eval/score_mean) = %v, %v, want steps 20..120 every 20, last 3.4", x, y)
	}
	// An evaluation line ("kind": "eval", written after later steps) is
	// merged into the row of the step it evaluated.
	if r := m.Rows[19]; r[metrics.KeyEvalWinRate] != 27.5 || r[metrics.KeyScoreMean] != 2.664 {
		t.Errorf("step 20 = %v, want its evaluation's win rate 27.5 merged with its score_mean 2.664", r)
	}
	if !m.Has(metrics.KeyEvalAgreementRate) || m.Has("eval/score_min") {
		t.Errorf("Has: %s %v, eval/score_min %v; want true, false",
			metrics.KeyEvalAgreementRate, m.Has(metrics.KeyEvalAgreementRate), m.Has("eval/score_min"))
	}
	if k := m.Keys(); len(k) == 0 || k[0] != "agreement_rate" {
		t.Errorf("Keys() = %v", k)
	}
}

func TestReadEvalFiles(t *testing.T) {
	e, err := ReadEvalFiles(fixtureEvals)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Pairwise) != 7 || len(e.Bench) != 7 || len(e.Agreement) != 3 {
		t.Fatalf("ReadEvalFiles: %d pairwise, %d bench, %d agreement; want 7, 7, 3", len(e.Pairwise), len(e.Bench), len(e.Agreement))
	}
	// The file says mean 99, sd 99; the runs 48 50 52 give mean 50 and
	// SD sqrt((4+0+4)/2) = 2.
	if p := e.Pairwise[1]; p.Mean != 50 || p.SD != 2 || p.Kind != KindPairwise {
		t.Errorf("pairwise[1] mean, sd, kind = %v, %v, %q, want 50, 2, pairwise", p.Mean, p.SD, p.Kind)
	}
	// Rounds: left (2.4 + 2.6)/2 = 2.5, right (3.1 + 3.3)/2 = 3.2.
	if l, r := e.Pairwise[4].rounds(); l == nil || r == nil || !near(*l, 2.5) || !near(*r, 3.2) {
		t.Errorf("pairwise[4].rounds() = %v, %v, want 2.5, 3.2", l, r)
	}
	if l, r := e.Pairwise[6].rounds(); l != nil || r == nil {
		t.Errorf("pairwise[6].rounds() = %v, %v, want nil left", l, r)
	}
	// Runs as bare numbers: (30 + 36.67)/2 = 33.33.
	if b := e.Bench[2]; len(b.Runs) != 2 || b.Runs[1].Accuracy != 36.666666666666664 || !near(b.Mean, 100.0/3) {
		t.Errorf("bench[2] = %+v, want runs 30, 36.67 and mean 33.33", b)
	}
	// A bench.Result file (extra fields ignored; mean recomputed from runs).
	if b := e.Bench[1]; b.Model != "ca-aligned" || !near(b.Mean, (60.101010101010104+61.111111111111114)/2) {
		t.Errorf("bench[1] = %+v", b)
	}
	if a := e.Agreement[2]; a.Label != "5.2 run 1 vs. run 2" || a.Kappa == nil || *a.Kappa != 0.93 || a.N != 100 {
		t.Errorf("agreement[2] = %+v", a)
	}
}

func TestReadEvalFilesErrors(t *testing.T) {
	tests := []struct{ content, want string }{
		{`{"foo": 1}`, "x.json object 1: cannot tell the kind"},
		{`{"kind": "elo"}`, `unknown kind "elo"`},
		{`[{"benchmark": "b", "runs": []}, {"left": "a", "right": "b", "aspect": "ca", "decoding": "beam"}]`, `object 2: pairwise decoding "beam"`},
		{`{"left": "a", "right": "b", "decoding": "greedy"}`, "needs left, right and aspect"},
		{`{"benchmark": ""}`, "needs a benchmark"},
		{`{"benchmark": "b", "runs": ["x"]}`, "report.BenchRun"},
		{`not json`, "x.json"},
		{``, "no results"},
	}
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), "x.json")
		if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadEvalFiles([]string{p})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadEvalFiles(%s) error = %v, want it to contain %q", tt.content, err, tt.want)
		}
	}
}

func TestResultConstructorsRoundTrip(t *testing.T) {
	w, err := stats.WinRate([]stats.Outcome{stats.Win, stats.Win, stats.Tie, stats.Loss})
	if err != nil {
		t.Fatal(err)
	}
	two := 2.0
	runs := []PairwiseRun{NewPairwiseRun(w, &two, nil), {WinRate: 37.5}}
	p := NewPairwiseResult("L", "R", "s", AspectConflictResolution, DecodingSampling, runs)
	// Win rates 62.5 and 37.5: mean 50, SD sqrt(2 · 12.5²) = 17.678.
	if p.Mean != 50 || !near(p.SD, 12.5*math.Sqrt2) || p.Runs[0].Wins != 2 || p.Runs[0].Ties != 1 {
		t.Errorf("NewPairwiseResult = %+v", p)
	}
	b := NewBenchResult("aime2025", "base", 30, []float64{20, 30})
	dir := t.TempDir()
	if err := WriteJSON(filepath.Join(dir, "p.json"), p); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(filepath.Join(dir, "b.json"), []BenchResult{b}); err != nil {
		t.Fatal(err)
	}
	e, err := ReadEvalFiles([]string{filepath.Join(dir, "p.json"), filepath.Join(dir, "b.json")})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Pairwise) != 1 || e.Pairwise[0].Runs[0].RoundsLeft == nil || *e.Pairwise[0].Runs[0].RoundsLeft != 2 || e.Pairwise[0].Runs[0].RoundsRight != nil {
		t.Errorf("pairwise round trip = %+v", e.Pairwise)
	}
	if len(e.Bench) != 1 || e.Bench[0].Mean != 25 || e.Bench[0].N != 30 || e.Bench[0].Runs[1].Accuracy != 30 {
		t.Errorf("bench round trip = %+v", e.Bench)
	}
}

// TestRoundsUndefinedWithoutAgreement: a step (or an evaluation side) with
// no agreement has no rounds to agreement; the loop's 0 is dropped, so the
// chart shows a gap.
func TestRoundsUndefinedWithoutAgreement(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	lines := `{"step": 1, "agreement_rate": 0, "rounds_to_agreement": 0}
{"step": 2, "agreement_rate": 0.5, "rounds_to_agreement": 2}
{"step": 2, "kind": "eval", "eval/agreement_rate": 1, "eval/rounds_to_agreement": 1, "eval/base_agreement_rate": 0, "eval/base_rounds_to_agreement": 0}
`
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key   metrics.Key
		steps int
	}{
		{metrics.KeyRoundsToAgreement, 1},
		{metrics.EvalPrefix + metrics.KeyRoundsToAgreement, 1},
		{metrics.EvalPrefix + metrics.KeyBasePrefix + metrics.KeyRoundsToAgreement, 0},
		{metrics.KeyAgreementRate, 2},
	} {
		if x, _ := m.Series(tt.key); len(x) != tt.steps {
			t.Errorf("Series(%s) has %d steps %v, want %d", tt.key, len(x), x, tt.steps)
		}
	}
}

// TestRoundsPanelGap: panel (c), rounds to agreement, leaves a gap at the
// steps without agreement (the key absent, as the loop writes it now, or
// 0, as it wrote before), not a line joined over them, and its running
// average does not fill them from their neighbours.
func TestRoundsPanelGap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	lines := `{"step": 1, "agreement_rate": 0.5, "rounds_to_agreement": 2}
{"step": 2, "agreement_rate": 0}
{"step": 3, "agreement_rate": 0, "rounds_to_agreement": 0}
{"step": 4, "agreement_rate": 1, "rounds_to_agreement": 1}
{"step": 5, "agreement_rate": 1, "rounds_to_agreement": 1}
`
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	var c panel
	for _, pn := range trainingPanels("x", [2]float64{0, 1}) {
		if pn.file == "rounds_to_agreement.png" {
			c = pn
		}
	}
	x, y, ok := c.series(m, metrics.KeyRoundsToAgreement, 3)
	want := []float64{2, math.NaN(), math.NaN(), 1, 1}
	same := ok && len(x) == len(want) && len(y) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = x[i] == float64(i+1) && (y[i] == want[i] || math.IsNaN(y[i]) && math.IsNaN(want[i]))
	}
	if !same {
		t.Errorf("panel (c) draws steps %v at %v, want steps 1–5 at %v (a gap at 2 and 3)", x, y, want)
	}
	if !m.Has(metrics.KeyRoundsToAgreement) {
		t.Error("Has(rounds_to_agreement) is false, want true")
	}
	if xs, _ := m.Series(metrics.KeyRoundsToAgreement); len(xs) != 3 {
		t.Errorf("Series(rounds_to_agreement) has steps %v, want the 3 defined ones", xs)
	}
}
