package harness

import (
	"github.com/parleyhq/parley/rollout/deliberation"
	"strings"
	"testing"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/stats"
)

func TestTables(t *testing.T) {
	two, three := 2.0, 3.0
	w := func(wins, ties, losses int) stats.WinRateResult {
		r := stats.WinRateResult{Wins: wins, Ties: ties, Losses: losses}
		r.Percent = 100 * (float64(wins) + 0.5*float64(ties)) / float64(r.N())
		return r
	}
	cells := []PairwiseCell{{
		PairwiseResult: report.NewPairwiseResult("ca", "base", deliberation.SetLabel, report.AspectCA, report.DecodingGreedy,
			[]report.PairwiseRun{report.NewPairwiseRun(w(6, 2, 0), &two, &three), report.NewPairwiseRun(w(4, 2, 2), &two, &three)}),
		LeftGame: "deliberation", RightGame: "deliberation", Prompts: 4, JudgeFailed: 1,
	}}
	var b strings.Builder
	if err := WritePairwiseTable(&b, cells); err != nil {
		t.Fatal(err)
	}
	// Runs at 87.5 and 62.5 %: mean 75, SD √(2·12.5²) = 17.7.
	for _, want := range []string{"ca (deliberation) vs. base (deliberation) on conflict resolution questions, 4 prompts",
		"a tie 0.5", "75.0 ± 17.7", "10/4/2", "2.00", "3.00", "1 (rollout 0, judge 1)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("pairwise table lacks %q:\n%s", want, b.String())
		}
	}

	// No Go identifiers in what a user reads.
	if strings.Contains(b.String(), "stats.") {
		t.Errorf("pairwise table names Go code:\n%s", b.String())
	}

	b.Reset()
	k := 0.5
	rep := AgreementReport{AgreementResult: report.AgreementResult{Label: "x", Agreement: stats.Agreement{N: 2, Exact: 50, WithinOne: 100, Kappa: &k}},
		JudgeA: "a", JudgeB: "b", Confusion: [][]int{{1, 0}, {1, 0}}, Rollouts: 3, Sampled: 2}
	if err := WriteAgreement(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Judge agreement: x (A = a, B = b)", "exact agreement (%)     50.0", "Pearson r", "n/a", "0.50", "A\\B"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("agreement table lacks %q:\n%s", want, b.String())
		}
	}

	b.Reset()
	results := []report.BenchResult{
		report.NewBenchResult("gpqa_diamond", "ca", 4, []float64{75, 50}),
		report.NewBenchResult("gpqa_diamond", "base", 4, []float64{25, 25}),
	}
	if err := WriteBenchTable(&b, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "base") || strings.Index(lines[1], "base") > strings.Index(lines[1], "ca") ||
		!strings.Contains(lines[2], "gpqa_diamond (4)") || !strings.Contains(lines[2], "25.0 ± 0.0 (2 runs)") || !strings.Contains(lines[2], "62.5 ± 17.7") {
		t.Errorf("bench table:\n%s", b.String())
	}
}

// The bench table names each scorer, a reference's in its row, and says how
// the responses cut off while thinking were read.
func TestBenchTableScorers(t *testing.T) {
	parley := report.NewBenchResult("aime2024", "base", 30, []float64{20})
	parley.Scorer, parley.CutOff = bench.ScorerParley, 2
	mv := report.NewBenchResult("aime2024", "base", 30, []float64{25})
	mv.Scorer, mv.CutOff = bench.ScorerMathVerify, 1
	var b strings.Builder
	if err := WriteBenchTable(&b, []report.BenchResult{parley, mv, report.NewBenchResult("ifeval", "base", 5, []float64{40})}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"aime2024 (30) ", "20.0 ± 0.0", "aime2024 [math-verify] (30) ", "25.0 ± 0.0", "ifeval (5)",
		"Scorer parley: parley's own", "Scorer math-verify: Hugging Face math-verify",
		"aime2024, base: 2 responses end inside an unclosed thinking block (cut off while thinking): parley's scorer gives them no answer",
		"aime2024 [math-verify], base: 1 response ends inside an unclosed thinking block (cut off while thinking): math-verify reads them whole",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("bench table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestBenchScorer(t *testing.T) {
	tests := []struct {
		benchmark, scorer, want, results, err string
	}{
		{bench.GPQADiamond, "", bench.ScorerParley, "gpqa_diamond.json", ""},
		{bench.GPQADiamond, "lm-eval-strict", "lm-eval-strict", "gpqa_diamond.lm-eval-strict.json", ""},
		{bench.AIME2025, "math-verify", "math-verify", "aime2025.math-verify.json", ""},
		{IFEval, "parley", "", "ifeval.json", ""},
		{IFEval, "simple-evals", "", "", "ifeval has one scorer"},
		{bench.AIME2024, "simple-evals", "", "", "want one of parley, math-verify"},
	}
	for _, tt := range tests {
		got, err := BenchScorer(tt.benchmark, tt.scorer)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("BenchScorer(%q, %q) = %q, %v, want %q, %q", tt.benchmark, tt.scorer, got, err, tt.want, tt.err)
		}
		if err == nil && ResultsFile(tt.benchmark, got) != tt.results {
			t.Errorf("ResultsFile(%q, %q) = %q, want %q", tt.benchmark, got, ResultsFile(tt.benchmark, got), tt.results)
		}
	}
	if got := ScoresFile("aime2025", "ca/1", "math-verify"); got != "aime2025-ca_1.math-verify.scores.json" {
		t.Errorf("ScoresFile = %q", got)
	}
}
