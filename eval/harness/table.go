package harness

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/report"
)

// WritePairwiseTable writes the cells of one comparison as a table: the
// left win rate per aspect and decoding (mean ± SD over runs), the verdict
// counts summed over runs, each side's mean rounds of negotiation, and the
// comparisons excluded.
func WritePairwiseTable(w io.Writer, cells []PairwiseCell) error {
	if len(cells) == 0 {
		_, err := fmt.Fprintln(w, "no pairwise results")
		return err
	}
	c0 := cells[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s) vs. %s (%s) on %s, %d prompts\n", c0.Left, c0.LeftGame, c0.Right, c0.RightGame, c0.Set, c0.Prompts)
	b.WriteString("Left win rate in %, mean ± SD (sample SD) over runs. Each prompt is judged in both orders; " +
		"a verdict for the left side counts 1, a tie 0.5.\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "aspect\tdecoding\truns\tleft win rate\twins/ties/losses\trounds left\trounds right\texcluded")
	for _, c := range cells {
		var wins, ties, losses int
		var rl, rr []float64
		for _, r := range c.Runs {
			wins, ties, losses = wins+r.Wins, ties+r.Ties, losses+r.Losses
			if r.RoundsLeft != nil {
				rl = append(rl, *r.RoundsLeft)
			}
			if r.RoundsRight != nil {
				rr = append(rr, *r.RoundsRight)
			}
		}
		rate := "–"
		if len(c.Runs) > 0 {
			rate = fmt.Sprintf("%.1f ± %.1f", c.Mean, c.SD)
		}
		excluded := "0"
		if n := c.RolloutFailed + c.JudgeFailed; n > 0 {
			excluded = fmt.Sprintf("%d (rollout %d, judge %d)", n, c.RolloutFailed, c.JudgeFailed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d/%d/%d\t%s\t%s\t%s\n", c.Aspect, c.Decoding, len(c.Runs), rate,
			wins, ties, losses, meanOrDash(rl), meanOrDash(rr), excluded)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func meanOrDash(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return fmt.Sprintf("%.2f", s/float64(len(xs)))
}

// WriteAgreement writes the agreement statistics (as in seed 000 table 7)
// and the confusion matrix, judge A in rows and judge B in columns.
func WriteAgreement(w io.Writer, rep AgreementReport) error {
	var b strings.Builder
	label := rep.Label
	if label == "" {
		label = rep.JudgeA + " vs. " + rep.JudgeB
	}
	fmt.Fprintf(&b, "Judge agreement: %s (A = %s, B = %s)\n", label, rep.JudgeA, rep.JudgeB)
	fmt.Fprintf(&b, "rollouts %d, failed in generation %d, sampled %d", rep.Rollouts, rep.FailedRollouts, rep.Sampled)
	if rep.SampleBy != "" {
		fmt.Fprintf(&b, " (balanced by %s)", rep.SampleBy)
	}
	fmt.Fprintf(&b, ", excluded %d (judge A failed %d, judge B failed %d), compared %d\n",
		rep.Excluded, rep.JudgeAFailed, rep.JudgeBFailed, rep.N)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "exact agreement (%%)\t%.1f\n", rep.Exact)
	fmt.Fprintf(tw, "±1 agreement (%%)\t%.1f\n", rep.WithinOne)
	fmt.Fprintf(tw, "Pearson r\t%s\n", optFloat(rep.Pearson))
	fmt.Fprintf(tw, "weighted κ (quadratic)\t%s\n", optFloat(rep.Kappa))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Confusion) > 0 {
		b.WriteString("confusion (rows: judge A score, columns: judge B score)\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "A\\B\t")
		for j := range rep.Confusion[0] {
			fmt.Fprintf(tw, "%d\t", j+1)
		}
		fmt.Fprintln(tw)
		for i, row := range rep.Confusion {
			fmt.Fprintf(tw, "%d\t", i+1)
			for _, n := range row {
				fmt.Fprintf(tw, "%d\t", n)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func optFloat(p *float64) string {
	if p == nil {
		return "n/a (a judge gave one score throughout)"
	}
	return fmt.Sprintf("%.2f", *p)
}

// WriteBenchTable writes benchmark results as seed 000 table 4: a row per
// benchmark and scorer, a column per model ("base" first), accuracy in % as
// mean ± SD over runs. Each scorer is named and described under the table,
// with the responses that ended inside their thinking block (how each
// scorer read them).
func WriteBenchTable(w io.Writer, results []report.BenchResult) error {
	var rows, models, scorers []string
	cells := map[[2]string]report.BenchResult{}
	for _, r := range results {
		row := benchRow(r)
		if !slices.Contains(rows, row) {
			rows = append(rows, row)
		}
		if !slices.Contains(models, r.Model) {
			models = append(models, r.Model)
		}
		if r.Scorer != "" && !slices.Contains(scorers, r.Scorer) {
			scorers = append(scorers, r.Scorer)
		}
		cells[[2]string{row, r.Model}] = r
	}
	if i := slices.Index(models, "base"); i > 0 {
		models = append([]string{"base"}, slices.Delete(models, i, i+1)...)
	}
	var b strings.Builder
	b.WriteString("Accuracy in %, mean ± SD (sample SD) over runs.\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "benchmark (items)\t")
	for _, m := range models {
		fmt.Fprintf(tw, "%s\t", m)
	}
	fmt.Fprintln(tw)
	for _, row := range rows {
		n := 0
		for _, m := range models {
			if r, ok := cells[[2]string{row, m}]; ok && r.N > 0 {
				n = r.N
			}
		}
		fmt.Fprintf(tw, "%s (%d)\t", row, n)
		for _, m := range models {
			r, ok := cells[[2]string{row, m}]
			if !ok || len(r.Runs) == 0 {
				fmt.Fprint(tw, "–\t")
				continue
			}
			fmt.Fprintf(tw, "%.1f ± %.1f (%d runs)\t", r.Mean, r.SD, len(r.Runs))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sc := range scorers {
		fmt.Fprintf(&b, "Scorer %s: %s.\n", sc, bench.DescribeScorer(sc))
	}
	for _, r := range results {
		if r.CutOff == 0 {
			continue
		}
		how := r.Scorer + " reads them whole, thinking as answer (parley's scorer would give them no answer)"
		if r.Scorer == bench.ScorerParley {
			how = "parley's scorer gives them no answer (the reference scorers would read them whole)"
		}
		noun := "responses end"
		if r.CutOff == 1 {
			noun = "response ends"
		}
		fmt.Fprintf(&b, "%s, %s: %d %s inside an unclosed thinking block (cut off while thinking): %s.\n", benchRow(r), r.Model, r.CutOff, noun, how)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// benchRow is a result's row: the benchmark, and its scorer when it is a
// reference's (parley's own is named under the table).
func benchRow(r report.BenchResult) string {
	if r.Scorer == "" || r.Scorer == bench.ScorerParley {
		return r.Benchmark
	}
	return r.Benchmark + " [" + r.Scorer + "]"
}
