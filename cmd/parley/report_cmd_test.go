package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/stats"
	"go.uber.org/zap"
)

func TestReport(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "runs", "demo")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var m strings.Builder
	for step := 1; step <= 12; step++ {
		fmt.Fprintf(&m, `{"step": %d, "score_min": %g, "score_mean": %g, "score_max": %g, "agreement_rate": %g, "rounds_to_agreement": %g}`+"\n",
			step, 1+0.1*float64(step), 2+0.1*float64(step), 3+0.1*float64(step), 0.05*float64(step), 4-0.1*float64(step))
	}
	if err := os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte(m.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pairwise.json")
	w := stats.WinRateResult{Wins: 5, Ties: 2, Losses: 1, Percent: 75}
	if err := report.WriteJSON(pw, []report.PairwiseResult{
		report.NewPairwiseResult("ca", "base", "conflict resolution questions", report.AspectCA, report.DecodingGreedy,
			[]report.PairwiseRun{report.NewPairwiseRun(w, nil, nil), report.NewPairwiseRun(w, nil, nil)}),
	}); err != nil {
		t.Fatal(err)
	}
	bn := filepath.Join(dir, "bench.json")
	if err := report.WriteJSON(bn, []report.BenchResult{report.NewBenchResult("aime2024", "base", 30, []float64{10, 20})}); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out")
	stdout, err := run(t, newReportCmd(quietApp()), runDir, "--eval", pw+","+bn, "--out", out, "--window", "4", "--title", "Demo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(stdout) != filepath.Join(out, report.ReportFile) {
		t.Errorf("printed %q, want the report's path", stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, report.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Demo", "Training dynamics", "Pairwise comparisons", "75.0 ± 0.0", "Benchmarks", "15.0 ± 7.1"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	pngs, _ := filepath.Glob(filepath.Join(out, "*.png"))
	if len(pngs) == 0 {
		t.Errorf("no PNG written in %s", out)
	}
	for _, p := range pngs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
			t.Errorf("%s is not a PNG", p)
		}
		if !strings.Contains(string(md), "("+filepath.Base(p)+")") {
			t.Errorf("report.md does not link %s", filepath.Base(p))
		}
	}

	// Evaluations only.
	only := filepath.Join(dir, "only")
	if _, err := run(t, newReportCmd(quietApp()), "--eval", bn, "--out", only); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(only, report.ReportFile)); err != nil {
		t.Error(err)
	}
	// The default output folder is RUN_DIR/report; "report written" is
	// logged once, by whichever of the command and report.Generate says it.
	a, logs := observedApp(zap.DebugLevel)
	if _, err := run(t, newReportCmd(a), runDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "report", report.ReportFile)); err != nil {
		t.Error(err)
	}
	if n := logs.FilterMessageSnippet("report written").Len(); n != 1 {
		t.Errorf("parley report logged \"report written\" %d times, want once: %v", n, logs.All())
	}
	// A line that is not a metrics object is skipped, with a warning on
	// the terminal, not only a note in the report.
	damaged := filepath.Join(dir, "runs", "damaged")
	if err := os.MkdirAll(damaged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damaged, "metrics.jsonl"), []byte(m.String()+"garbage\n"+`{"step": 13}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, logs = observedApp(zap.InfoLevel)
	if _, err := run(t, newReportCmd(a), damaged); err != nil {
		t.Fatal(err)
	}
	if w := logs.FilterLevelExact(zap.WarnLevel).FilterMessage("metrics.jsonl line skipped").All(); len(w) != 1 ||
		!strings.Contains(fmt.Sprint(w[0].ContextMap()), "metrics.jsonl line 13: not a JSON object, skipped") {
		t.Errorf("the garbage line of %s was not warned of once: %v", damaged, logs.All())
	}
	// An empty (or mistyped) run directory is an error, not an empty report.
	empty := filepath.Join(dir, "runs", "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, newReportCmd(quietApp()), empty, "--eval", bn)
	if want := empty + " holds no config.yaml, metrics.jsonl or rollouts/: not a run directory"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("report of an empty directory: error %v, want one holding %q", err, want)
	}
	if _, serr := os.Stat(filepath.Join(empty, "report")); serr == nil {
		t.Errorf("report of an empty directory wrote %s", filepath.Join(empty, "report"))
	}
	for name, args := range map[string][]string{
		"nothing":             {},
		"no such run":         {filepath.Join(dir, "missing")},
		"bad eval":            {runDir, "--eval", filepath.Join(dir, "missing.json"), "--out", out},
		"two run dirs":        {runDir, runDir},
		"negative window":     {runDir, "--window", "-3", "--out", out},
		"window not a number": {runDir, "--window", "ten", "--out", out},
	} {
		if _, err := run(t, newReportCmd(quietApp()), args...); err == nil {
			t.Errorf("report (%s) = nil error, want one", name)
		}
	}
}
