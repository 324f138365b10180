package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestFlatZero: a panel is left out when every value of its keys is
// within zeroTol of 0 (floating-point noise such as an on-policy KL), and
// the note says whether the values were exactly 0.
func TestFlatZero(t *testing.T) {
	tests := []struct {
		name        string
		values      []float64
		zero, exact bool
	}{
		{"exact zeros", []float64{0, 0, 0}, true, true},
		{"noise", []float64{0, -5e-9, 3e-10}, true, false},
		{"at the tolerance", []float64{zeroTol, -zeroTol}, true, false},
		{"a real value", []float64{0, 2e-6, 0}, false, false},
		{"no points", nil, false, true},
	}
	c := panel{lines: []chartLine{{key: "k"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for i, v := range tt.values {
				lines = append(lines, fmt.Sprintf(`{"step": %d, "k": %s}`, i+1, strconv.FormatFloat(v, 'g', -1, 64)))
			}
			m, err := decodeMetrics(strings.NewReader(strings.Join(lines, "\n")), "metrics.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			zero, n, exact := flatZero(m, c)
			if zero != tt.zero || (zero && (exact != tt.exact || n != len(tt.values))) {
				t.Errorf("flatZero(%v) = %v, %d, exact %v; want %v, %d, exact %v", tt.values, zero, n, exact, tt.zero, len(tt.values), tt.exact)
			}
		})
	}
}

// TestChartsSpanTheRun: the report's charts are drawn within their
// scale's limits (rates 0–1, the win rate 0–100 %, the judge's scale) and
// span the run's steps, also the trainer's, which have no points at steps
// whose batch was empty (testdata/run/saturated: the quickstart's
// trajectory, every batch empty from step 15); the report says why.
func TestChartsSpanTheRun(t *testing.T) {
	m, err := ReadMetrics("testdata/run/saturated/metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	scale := dataset.ScoreScale{Name: "rule keyword_share", Min: 0, Max: 1}
	g := &generator{scale: scale}
	w := g.window(len(m.Steps))
	var panels []panel
	panels = append(panels, trainingPanels(g.scoreLabel(), scoreLimits(scale))...)
	panels = append(panels, evalPanels(g.scoreLabel(), scoreLimits(scale))...)
	panels = append(panels, trainerPanels()...)
	limits := map[string][2]float64{
		"reward.png": {0, 1}, "agreement_rate.png": {0, 1}, "eval_win_rate.png": {0, 100},
		"eval_score.png": {0, 1}, "eval_agreement_rate.png": {0, 1}, "trainer_clip_frac.png": {0, 1},
	}
	for _, c := range panels {
		lines, _ := g.panelLines(m, c, w)
		ch := g.figureChart(m, c, w, lines)
		if ch.XMin != 1 || ch.XMax != 24 {
			t.Errorf("%s: x axis spans %g–%g, want the run's steps 1–24", c.file, ch.XMin, ch.XMax)
		}
		if got, want := [2]float64{ch.YMin, ch.YMax}, limits[c.file]; got != want {
			t.Errorf("%s: y limits %v, want %v", c.file, got, want)
		}
	}

	out := t.TempDir()
	if err := Generate(Options{RunDir: "testdata/run/saturated", OutDir: out, Scale: scale}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "The trainer's batch was empty at steps 15–24"; !strings.Contains(string(md), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
}

func TestStepSpans(t *testing.T) {
	tests := []struct {
		steps []int
		want  string
	}{
		{[]int{3}, "3"},
		{[]int{15, 16, 17}, "15–17"},
		{[]int{1, 3, 4, 5, 9}, "1, 3–5, 9"},
	}
	for _, tt := range tests {
		if got := stepSpans(tt.steps); got != tt.want {
			t.Errorf("stepSpans(%v) = %q, want %q", tt.steps, got, tt.want)
		}
	}
}
