package tournament

import (
	"context"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/sim"
)

// TestEndToEndReport: a tournament of 4 simulated agents × 2 framings × 2
// rounds against serve-sim, killed once and resumed, then its report with
// every table and figure. PARLEY_KEEP_REPORT=DIR keeps the report there.
func TestEndToEndReport(t *testing.T) {
	url := startSim(t, sim.Options{JudgeMalformedRate: 0.05})
	spec := mustSpec(t, specYAML(url, url, 2, `cohorts:
  - {name: no open holder, drop_holders: [open-g95-p90]}
  - {name: "no open, both roles", drop: [open-g95-p90]}`))
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	if _, err := Run(ctx, Options{Dir: dir, Spec: spec, Progress: func(int, int, int) {
		if n.Add(1) == 12 {
			cancel()
		}
	}}); err == nil {
		t.Fatal("the stopped run did not report its stop")
	}
	sum, err := Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err != nil || !sum.Complete || sum.Resumed < 11 {
		t.Fatalf("resume: %+v, %v", sum, err)
	}
	out := os.Getenv("PARLEY_KEEP_REPORT")
	if out == "" {
		out = filepath.Join(dir, "report")
	}
	path, err := WriteReport(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"figure 1", "table 5", "figure 3, table 3", "table 4", "figure 6", "table 7, figure 5", "figure 12", "figure 7",
		"holder identity", "no open holder", "Spearman", "TOST p", "Elo per role", "24 scheduled"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, f := range []string{FigShareMatrix, FigBudget, FigBudgetCI, FigCohorts, FigFraming, FigRefusal, FigCumulative, FigAudit} {
		file, err := os.Open(filepath.Join(out, f))
		if err != nil {
			t.Errorf("figure %s: %v", f, err)
			continue
		}
		img, err := png.Decode(file)
		file.Close()
		if err != nil || img.Bounds().Dx() < 300 {
			t.Errorf("figure %s: %v", f, err)
		}
		if !strings.Contains(string(md), "]("+f+")") {
			t.Errorf("the report does not show %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(out, AnalysisFile)); err != nil {
		t.Error(err)
	}
	// The analysis agrees with the records.
	s, _ := ReadSpec(dir)
	recs, _ := ReadRecords(dir)
	a, err := Analyze(s, 24, recs)
	if err != nil {
		t.Fatal(err)
	}
	total, games := 0.0, 0
	for _, r := range recs {
		if o, _ := r.Outcome(); o != nil {
			total += o.Share
			games++
		}
	}
	if a.Played != games || a.Failed != 24-games {
		t.Errorf("played %d failed %d, records %d played", a.Played, a.Failed, games)
	}
	mean := 0.0
	for _, row := range a.Framing.Rows {
		mean += row.Mean * float64(row.Games) / 100
	}
	if math.Abs(mean-total) > 1e-9 {
		t.Errorf("framing rows add up to %v, records to %v", mean, total)
	}
	// The stingy holder gives least: first in the robustness order.
	if s.Agents[a.HolderOrder[0]].Name != "stingy-g5-p20" {
		t.Errorf("most robust holder %s", s.Agents[a.HolderOrder[0]].Name)
	}
}
