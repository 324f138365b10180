package endowment

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/stats"
	"github.com/parleyhq/parley/stats/roundrobin"
)

// Figure files of a tournament report.
const (
	FigShareMatrix = "fig1_share_matrix.png"
	FigBudget      = "fig3_budget.png"
	FigBudgetCI    = "fig3_budget_intervals.png"
	FigCohorts     = "fig4_cohorts.png"
	FigFraming     = "fig5_framing.png"
	FigRefusal     = "fig6_refusal.png"
	FigCumulative  = "fig7_cumulative.png"
	FigAudit       = "fig12_audit.png"
)

// writer accumulates the report's markdown and its first error.
type writer struct {
	s   *tournamentView
	a   *Analysis
	out string
	md  strings.Builder
	err error
}

func (w *writer) printf(format string, args ...any) { fmt.Fprintf(&w.md, format, args...) }

// figure draws a figure into the report's folder and shows it; a figure
// with nothing to draw (figure.ErrNoData: every component zero, no finite
// point) is a note saying so, and the report goes on. Any other error
// (the file cannot be written) stops the report.
func (w *writer) figure(name, alt string, draw func(path string) error) {
	if w.err != nil {
		return
	}
	if err := draw(filepath.Join(w.out, name)); err != nil {
		if errors.Is(err, figure.ErrNoData) {
			detail := err.Error()
			if _, after, ok := strings.Cut(detail, name+": "); ok {
				detail = after
			}
			w.printf("> Figure `%s` (%s) is not drawn: %s.\n\n", name, alt, detail)
			return
		}
		w.err = fmt.Errorf("%s: %w", name, err)
		return
	}
	w.printf("![%s](%s)\n\n", alt, name)
}

func (w *writer) table(header []string, rows [][]string) {
	w.printf("| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for _, r := range rows {
		w.printf("| %s |\n", strings.Join(r, " | "))
	}
	w.printf("\n")
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f", 100*x)
}

func f0(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.0f", x)
}

func f1(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.1f", x)
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}

func f3(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.3f", x)
}

func ci(iv Interval, f func(float64) string) string {
	if math.IsNaN(iv.Lo) {
		return "—"
	}
	return fmt.Sprintf("[%s, %s]", f(iv.Lo), f(iv.Hi))
}

// ratioCI is a ratio's interval; finite ratios of 1000 and more (a
// requester variance near zero) print as ≥1000, and an infinite limit
// (more than 2.5% of the resamples estimate the requester variance at
// zero) as ∞: the interval is unbounded.
func ratioCI(iv Interval) string {
	if math.IsNaN(iv.Lo) {
		return "—"
	}
	r := func(x float64) string {
		switch {
		case math.IsInf(x, 1):
			return "∞"
		case x >= 1000:
			return "≥1000"
		}
		return f1(x)
	}
	return fmt.Sprintf("[%s, %s]", r(iv.Lo), r(iv.Hi))
}

func ratio(x float64) string {
	if math.IsInf(x, 1) || x >= 1000 {
		return "≥1000×"
	}
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f×", x)
}

func (w *writer) all(name, promptsHash string) {
	a, s := w.a, w.s
	w.printf("# Tournament report: %s\n\n", name)
	w.printf("%d agents; schedule %s, %d rounds per framing, framings %s; turn limit %d holder replies, endowment $%g.\n\n",
		len(s.Agents), s.Schedule, s.Rounds, strings.Join(s.Conditions, " and "), s.cfg.MaxTurns, s.cfg.Endowment)
	w.printf("Games: %d scheduled, %d recorded, **%d played and analysed, %d failed** (excluded from every statistic)", a.Scheduled, a.Recorded, a.Played, a.Failed)
	if missing := a.Scheduled - a.Recorded; missing > 0 {
		w.printf(", %d not played yet (the tournament is incomplete)", missing)
	}
	w.printf(". Unparsed ledger verdicts (counted as no transfer): %d, in %d games.", a.Unparsed, a.GamesWithUnparsed)
	if promptsHash != "" {
		w.printf(" Prompt files: SHA-256 `%s` (prompts.json).", promptsHash[:16])
	}
	w.printf("\n\n")
	w.matrix()
	w.table5()
	w.budget()
	w.cohorts()
	w.refusal()
	w.framing()
	w.sequential()
	w.audit()
	w.cumulative()
	w.definitions()
}

func (w *writer) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = w.s.Agents[j].Name
	}
	return out
}

func (w *writer) matrix() {
	a := w.a
	w.printf("## Share transferred per ordered pairing (figure 1)\n\n")
	rows := append(w.names(a.HolderOrder), "mean")
	cols := append(w.names(a.RequesterOrder), "mean")
	vals := make([][]float64, len(rows))
	colSum, colN := make([]float64, len(cols)), make([]float64, len(cols))
	for i, h := range a.HolderOrder {
		vals[i] = make([]float64, len(cols))
		sum, n := 0.0, 0.0
		for j, r := range a.RequesterOrder {
			v := a.Share[h][r]
			vals[i][j] = v
			if !math.IsNaN(v) {
				sum, n = sum+v, n+1
				colSum[j], colN[j] = colSum[j]+v, colN[j]+1
			}
		}
		vals[i][len(cols)-1] = sum / n
		if n == 0 {
			vals[i][len(cols)-1] = math.NaN()
		}
	}
	last := make([]float64, len(cols))
	grand, gn := 0.0, 0.0
	for j := range last {
		last[j] = math.NaN()
		if colN[j] > 0 {
			last[j] = colSum[j] / colN[j]
			grand, gn = grand+colSum[j], gn+colN[j]
		}
	}
	if gn > 0 {
		last[len(cols)-1] = grand / gn // the mean of the cells
	}
	vals[len(rows)-1] = last
	size := 200 + 44*len(cols)
	w.figure(FigShareMatrix, "share matrix", figure.Heatmap{Title: "Mean share of the endowment transferred (%)", XLabel: "requester (sorted by yield)",
		YLabel: "holder (sorted by robustness)", Rows: rows, Cols: cols, Values: vals, Min: 0, Max: 1, Scale: 100, Format: "%.0f",
		WidthPx: max(size, 560), HeightPx: max(size-40, 480)}.WritePNG)
	w.printf("Rows are holders (least given first), columns requesters (most extracted first); the last row and column average over the cells. Grey cells are self-pairings, which do not occur (or pairings whose games all failed).\n\n")
}

func (w *writer) table5() {
	a := w.a
	w.printf("## Agents by role (table 5)\n\n")
	idx := make([]int, len(a.Agents))
	for i := range idx {
		idx[i] = i
	}
	// Sorted by holder Elo, highest first.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && less(a.Agents[idx[j-1]].HoldElo, a.Agents[idx[j]].HoldElo); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	var rows [][]string
	for _, i := range idx {
		r := a.Agents[i]
		open := "no"
		if r.OpenWeights {
			open = "yes"
		}
		rows = append(rows, []string{r.Name, r.Family, open, fmt.Sprint(r.ReqGames), f1(r.ReqWin), f1(r.ReqGot), f0(r.ReqElo),
			fmt.Sprint(r.HoldGames), f1(r.HoldWin), f1(r.HoldGave), f0(r.HoldElo)})
	}
	w.table([]string{"agent", "family", "open weights", "games as requester", "win%", "got%", "Elo", "games as holder", "win%", "gave%", "Elo"}, rows)
	w.printf("Elo per role: a requester's rating meets only holders' and the other way round, start %g, K %g, averaged over %d random orders of the games.\n\n",
		w.s.settings.Analysis.EloStart, w.s.settings.Analysis.EloK, w.s.settings.Analysis.EloPermutations)
}

// less orders NaN last.
func less(x, y float64) bool {
	if math.IsNaN(x) {
		return !math.IsNaN(y)
	}
	return !math.IsNaN(y) && x < y
}

var compLabels = map[string]string{
	roundrobin.CompHolder: "holder identity", roundrobin.CompRequester: "requester identity", roundrobin.CompMatchup: "requester × holder",
	roundrobin.CompFraming: "moral framing", roundrobin.CompResidual: "residual / game noise",
}

func (w *writer) budget() {
	b := w.a.Budget
	w.printf("## Sources of variance in the share transferred (figure 3, table 3)\n\n")
	if b.Err != "" && b.Mixed == nil && b.MixedErr == b.Err {
		w.printf("The budget could not be estimated: %s.\n\n", b.Err)
		return
	}
	if b.Err == "" {
		var segs []figure.Segment
		var rows []figure.IntervalRow
		for _, c := range roundrobin.Components {
			label := compLabels[c]
			iv := b.Shares[c]
			switch {
			case c == roundrobin.CompMatchup && b.MoM.Pooled, c == roundrobin.CompFraming && b.MoM.NoFraming:
				// Not estimated: no bar, and a row that says so.
				what := "in the residual"
				if c == roundrobin.CompFraming {
					what = "not estimated"
				}
				rows = append(rows, figure.IntervalRow{Label: label + " (" + what + ")", Point: math.NaN()})
				continue
			case c == roundrobin.CompResidual && b.MoM.Pooled:
				label += " + matchup"
			}
			segs = append(segs, figure.Segment{Label: label, Value: b.MoM.Value(c)})
			row := figure.IntervalRow{Label: label, Point: 100 * iv.Point}
			if c != roundrobin.CompMatchup { // that bootstrap resamples the unit the term is defined over
				row.Intervals = []figure.IntervalBar{{Lo: 100 * iv.Lo, Hi: 100 * iv.Hi, Width: 2}}
			}
			rows = append(rows, row)
		}
		w.figure(FigBudget, "variance budget", figure.StackedBar{Title: "Sources of variance (method of moments)", Segments: segs, WidthPx: 900}.WritePNG)
		w.figure(FigBudgetCI, "variance shares with intervals", figure.IntervalChart{Title: "Share of variance with 95% bootstrap intervals (ordered pairings resampled)",
			XLabel: "share of variance (%)", Rows: rows, WidthPx: 900}.WritePNG)
	}
	var trows [][]string
	for _, c := range roundrobin.Components {
		// Framing's share is small: three decimals, as in the paper's table 3.
		sh, shCI := pct, f1
		if c == roundrobin.CompFraming {
			sh = func(x float64) string { return f3(100 * x) }
			shCI = f3
		}
		mix, mixCI := "—", "—"
		if b.Mixed != nil {
			switch {
			case c == roundrobin.CompMatchup:
				mix, mixCI = "in residual", ""
			case c == roundrobin.CompFraming && b.Mixed.NoFraming:
				mix, mixCI = "not estimated", ""
			default:
				mix, mixCI = sh(b.MixedShares[c].Point), ci(Interval{Lo: 100 * b.MixedShares[c].Lo, Hi: 100 * b.MixedShares[c].Hi}, shCI)
			}
		}
		mom, momCI := "—", "—"
		if b.Err == "" {
			mom, momCI = sh(b.Shares[c].Point), ci(Interval{Lo: 100 * b.Shares[c].Lo, Hi: 100 * b.Shares[c].Hi}, shCI)
			switch {
			case c == roundrobin.CompMatchup && b.MoM.Pooled:
				mom, momCI = "in residual", ""
			case c == roundrobin.CompMatchup:
				momCI = "(point only)"
			case c == roundrobin.CompFraming && b.MoM.NoFraming:
				mom, momCI = "not estimated", ""
			}
		}
		trows = append(trows, []string{compLabels[c], mix, mixCI, mom, momCI})
	}
	mr, br := "—", "—"
	if b.Mixed != nil {
		mr = ratio(b.MixedRatio.Point)
	}
	if b.Err == "" {
		br = ratio(b.Ratio.Point)
	}
	trows = append(trows, []string{"holder : requester ratio", mr, ratioCI(b.MixedRatio), br, ratioCI(b.Ratio)})
	w.table([]string{"source of variance", "(A) %", "95% CI", "(B) %", "95% CI"}, trows)
	w.printf("(A) crossed random intercepts for holder and requester, framing as a fixed effect, fitted by REML (the matchup is part of the residual)")
	switch {
	case b.Mixed == nil:
		w.printf(": not reported, %s", b.MixedErr)
	case b.Mixed.NoFraming:
		w.printf(", here without the framing term: only one framing was played")
	}
	if b.Mixed != nil && b.Mixed.Singular {
		w.printf("; the fit is singular (a variance on the boundary, zero)")
	}
	if b.Mixed != nil {
		w.printf("; intervals from %d bootstrap resamples of the ordered pairings (%d whose fit failed left out)", b.Resamples, b.MixedFailedResamples)
	}
	if b.Err != "" {
		w.printf(". (B) the social-relations-model method of moments: not reported, %s.", b.Err)
	} else {
		w.printf(". (B) the social-relations-model method of moments, which separates the requester × holder matchup from game noise through the round-robin design")
		if b.MoM.Pooled {
			w.printf(", except here: no ordered pairing was played twice (one game per pairing, as at `rounds: 1`), so game noise cannot be told from the matchup and (B) counts the matchup in the residual, as (A) does")
		}
		matchup, framing := fmt.Sprintf("%.4f", b.MoM.Matchup), fmt.Sprintf("%.5f", b.MoM.Framing)
		if b.MoM.Pooled {
			matchup = "in the residual"
		}
		if b.MoM.NoFraming {
			framing = "not estimated"
		}
		w.printf("; reciprocity (the covariance of a pairing's matchup with the reverse pairing's) %.4f. Variances: holder %.4f, requester %.4f, matchup %s, framing %s, residual %.4f (negative estimates count as zero in the shares). Intervals: %d bootstrap resamples of the ordered pairings, holding the agents fixed (%d failed).",
			b.MoM.Reciprocity, b.MoM.Holder, b.MoM.Requester, matchup, framing, b.MoM.Residual, b.Resamples, b.FailedResamples)
	}
	switch {
	case b.Mixed != nil && b.Mixed.NoFraming:
		w.printf(" The framing term is left out of both: only one framing was played.")
	case b.Err == "" && b.MoM.NoFraming:
		w.printf(" (B) estimates framing within ordered pairings and none was played under both framings, so its framing is not estimated and stays in its residual; (A) estimates it across pairings.")
	}
	w.printf(" Framing in both is the variance the framing term adds over the games, p(1−p)·(effect² − its sampling variance), p the share of group-framing games: the square of an estimated effect alone would count its sampling noise as framing variance.\n\n")
}

func (w *writer) cohorts() {
	w.printf("## Budgets on cohort subsets (table 4)\n\n")
	if len(w.a.Cohorts) <= 1 {
		w.printf("The tournament file names no cohorts (`cohorts:`): only the full cohort.\n\n")
	}
	var rows [][]string
	var irows []figure.IntervalRow
	for _, c := range w.a.Cohorts {
		if c.Err != "" {
			rows = append(rows, []string{c.Name, fmt.Sprint(c.Games), "—", "—", "—", "— (" + c.Err + ")"})
			continue
		}
		h, r := c.Shares[roundrobin.CompHolder], c.Shares[roundrobin.CompRequester]
		rows = append(rows, []string{c.Name, fmt.Sprint(c.Games), fmt.Sprintf("%d / %d", c.Holders, c.Requesters),
			pct(h.Point) + " " + ci(Interval{Lo: 100 * h.Lo, Hi: 100 * h.Hi}, f1), pct(r.Point) + " " + ci(Interval{Lo: 100 * r.Lo, Hi: 100 * r.Hi}, f1),
			ratio(c.Ratio.Point) + " " + ratioCI(c.Ratio)})
		irows = append(irows,
			figure.IntervalRow{Label: c.Name + ": holder", Point: 100 * h.Point, Intervals: []figure.IntervalBar{{Lo: 100 * h.Lo, Hi: 100 * h.Hi, Width: 2}}},
			figure.IntervalRow{Label: c.Name + ": requester", Point: 100 * r.Point, Intervals: []figure.IntervalBar{{Lo: 100 * r.Lo, Hi: 100 * r.Hi, Width: 2}}})
	}
	w.table([]string{"cohort", "games", "holders / requesters", "holder %", "requester %", "ratio"}, rows)
	if len(irows) > 0 {
		w.figure(FigCohorts, "cohort budgets", figure.IntervalChart{Title: "Holder and requester shares of variance by cohort (95% intervals)",
			XLabel: "share of variance (%)", Rows: irows, WidthPx: 900}.WritePNG)
	}
	w.printf("Shares are the method-of-moments budget, which needs no optimiser and so stays stable on small subsets; intervals from %d bootstrap resamples of the remaining ordered pairings.\n\n", w.s.settings.Analysis.Bootstrap)
}

func (w *writer) refusal() {
	r := w.a.Refusal
	w.printf("## Turn-1 refusal against total losses (figure 6)\n\n")
	var pts []figure.LabelledPoint
	for i, h := range r.Holders {
		pts = append(pts, figure.LabelledPoint{X: r.Rate[i], Y: r.Gave[i], Label: h})
	}
	if len(pts) > 0 {
		w.figure(FigRefusal, "turn-1 refusal", figure.Scatter{Title: fmt.Sprintf("Turn-1 refusal and share given away (Spearman ρ = %s, held-out %s)", f2(r.Rho), f2(r.HeldOut)),
			XLabel: "turn-1 refusal rate", YLabel: "mean share of the endowment given", Points: pts}.WritePNG)
	}
	w.printf("Spearman's ρ across %d holders: **%s**", len(r.Holders), f3(r.Rho))
	if r.Err != "" {
		w.printf(" (%s)", r.Err)
	}
	w.printf(". Split-half held-out coefficient (turn-1 refusal on a random half of each holder's games, the share given on the other half, %d splits, %d skipped as constant): **%s**, central 95%% of splits [%s, %s].\n\n",
		r.Splits, r.SkippedSplits, f3(r.HeldOut), f3(r.HeldOutLo), f3(r.HeldOutHi))
}

func (w *writer) framing() {
	f := w.a.Framing
	w.printf("## The framing contrast (table 7, figure 5)\n\n")
	var rows [][]string
	for _, r := range f.Rows {
		rows = append(rows, []string{r.Framing, fmt.Sprint(r.Games), f2(r.Mean), f2(r.Median), f1(r.RequesterWin)})
	}
	w.table([]string{"framing", "games", "share transferred, mean (%)", "median (%)", "requester win rate (%)"}, rows)
	if f.Err != "" {
		w.printf("Cohen's d is not defined here: %s.\n\n", f.Err)
		return
	}
	w.printf("Cohen's d (singular − group, pooled SD): **%s**, 90%% interval [%s, %s], 95%% interval [%s, %s] (exact, noncentral t); the upper limit of the one-sided 95%% interval is d = %s.\n\n",
		f3(f.D.D), f3(f.CI90[0]), f3(f.CI90[1]), f3(f.CI95[0]), f3(f.CI95[1]), f3(f.CI90[1]))
	var trows [][]string
	band := 0.2
	for _, t := range f.TOST {
		eq := "no"
		if t.Equivalent(0.05) {
			eq = "yes"
		}
		trows = append(trows, []string{fmt.Sprintf("±%g", t.Bound), fmt.Sprintf("%.2f", 100*t.Delta), fmt.Sprintf("%.3g", t.PLower), fmt.Sprintf("%.3g", t.PUpper), fmt.Sprintf("%.3g", t.P), eq})
		if math.Abs(t.Bound-0.2) < math.Abs(band-0.2) || len(trows) == 1 {
			band = t.Bound
		}
	}
	w.table([]string{"bound (d)", "bound (share points)", "p lower", "p upper", "TOST p", "equivalent at 5%"}, trows)
	zero := 0.0
	w.figure(FigFraming, "framing effect", figure.IntervalChart{Title: fmt.Sprintf("Standardised framing effect (90%% thick, 95%% thin; band d = ±%g)", band),
		XLabel: "Cohen's d (singular − group)", Band: &[2]float64{-band, band}, Ref: &zero, WidthPx: 800,
		Rows: []figure.IntervalRow{{Label: "all games", Point: f.D.D, Intervals: []figure.IntervalBar{{Lo: f.CI95[0], Hi: f.CI95[1], Width: 1.5}, {Lo: f.CI90[0], Hi: f.CI90[1], Width: 5}}}}}.WritePNG)
}

func (w *writer) sequential() {
	sq := w.a.Sequential
	w.printf("## Sequential R² of the share transferred (table 8)\n\n")
	if sq.Err != "" {
		w.printf("Not estimated: %s.\n\n", sq.Err)
	} else {
		var rows [][]string
		add := func(order string, steps []stats.R2Step) {
			for i, st := range steps {
				name := st.Name
				if i > 0 {
					name = "+ " + name
				}
				params := fmt.Sprint(st.Params)
				if st.Params == 0 {
					params = "0 (constant here)"
				}
				rows = append(rows, []string{order, name, f3(st.R2), f3(st.Delta), params})
				order = ""
			}
		}
		add("the paper's", sq.Forward)
		add("reverse", sq.Reverse)
		w.table([]string{"order", "predictors entered", "R²", "ΔR²", "parameters added"}, rows)
		if len(sq.Reverse) == 3 {
			w.printf("Entered in the reverse order, framing and the message features explain %s together, requester identity adds %s and holder identity %s. ",
				f3(sq.Reverse[0].R2), f3(sq.Reverse[1].Delta), f3(sq.Reverse[2].Delta))
		}
		w.printf("Ordinary least squares of each game's share on an intercept and the blocks entered so far, over the %d games played: identities as one dummy per agent (one is the intercept's), framing as 0/1, the seven message features as they are. R² is in-sample, not adjusted: each identity adds (agents − 1) parameters, which in a small tournament are R² by themselves.\n\n", w.a.Played)
	}
	var rows [][]string
	for _, f := range sq.Features {
		rows = append(rows, []string{f.Name, f3(f.All), f3(f.Singular), f3(f.Group)})
	}
	if len(rows) > 0 {
		w.printf("Message features of the requester's messages (private traces removed), mean per game:\n\n")
		w.table([]string{"message feature", "all games", "singular", "group"}, rows)
	}
	for _, name := range MessageFeatureNames {
		w.printf("- **%s**: %s.\n", name, FeatureDefinitions[name])
	}
	w.printf("\nThe paper names these features without defining them; these definitions are parley's. A game's rates are per message, so a game cut short compares with a long one.\n\n")
}

func (w *writer) audit() {
	w.printf("## How many first-turn probes an audit needs (figure 12)\n\n")
	if len(w.a.Audit) == 0 {
		w.printf("Too few holders or games for the audit curve (it needs 3 holders with 2 games each).\n\n")
		return
	}
	drawn := false
	for _, p := range w.a.Audit {
		drawn = drawn || p.Draws > 0
	}
	if !drawn {
		w.printf("No draw gave a coefficient: in every draw the holders' turn-1 refusal rates, or their shares given on the other games, were all tied (as when no holder gives anything).\n\n")
	}
	var x, y, lo, hi []float64
	var rows [][]string
	for _, p := range w.a.Audit {
		x, y, lo, hi = append(x, float64(p.K)), append(y, p.Mean), append(lo, p.Lo), append(hi, p.Hi)
		rows = append(rows, []string{fmt.Sprint(p.K), f3(p.Mean), fmt.Sprintf("[%s, %s]", f3(p.Lo), f3(p.Hi)), fmt.Sprint(p.Draws)})
	}
	w.figure(FigAudit, "audit curve", figure.Chart{Title: "Turn-1 refusal from k probes against the loss on the other games", XLabel: "probes per agent (k)",
		YLabel: "Spearman ρ", IntegerX: true, YMin: -1, YMax: 1, Lines: []figure.Line{{Label: "mean over draws", X: x, Y: y}},
		Bands: []figure.Band{{Label: "central 95%", X: x, Lo: lo, Hi: hi, Color: figure.ColorBand}}}.WritePNG)
	w.table([]string{"k", "mean ρ", "central 95%", "draws"}, rows)
	w.printf("For each k, every holder's turn-1 refusal is estimated from k of its games drawn at random and set against its mean share given on its remaining games, %d draws per k (draws whose ranks are all tied are skipped).\n\n", w.s.settings.Analysis.AuditDraws)
}

func (w *writer) cumulative() {
	a := w.a
	w.printf("## Cumulative concession by turn (figure 7)\n\n")
	var lines []figure.Line
	x := make([]float64, a.MaxTurns)
	for t := range x {
		x[t] = float64(t + 1)
	}
	var rows [][]string
	for k, i := range a.HolderOrder {
		if math.IsNaN(a.Cumulative[i][0]) {
			continue
		}
		style := figure.StyleSolid
		if k >= figure.PaletteSize { // the palette repeats: tell the lines apart by dashes
			style = figure.StyleDashed
		}
		lines = append(lines, figure.Line{Label: w.s.Agents[i].Name, X: x, Y: a.Cumulative[i], Color: figure.Palette(k), Style: style})
		row := []string{w.s.Agents[i].Name}
		for _, v := range a.Cumulative[i] {
			row = append(row, f2(v))
		}
		rows = append(rows, row)
	}
	all := []string{"all holders"}
	for _, v := range a.CumulativeAll {
		all = append(all, f2(v))
	}
	rows = append(rows, all)
	w.figure(FigCumulative, "cumulative concession", figure.Chart{Title: "Cumulative amount conceded by turn (mean $ per game)", XLabel: "holder turn", YLabel: "dollars given", Lines: lines, WidthPx: 900, HeightPx: 560, IntegerX: true}.WritePNG)
	header := []string{"holder"}
	for t := 1; t <= a.MaxTurns; t++ {
		header = append(header, fmt.Sprintf("by turn %d ($)", t))
	}
	w.table(header, rows)
}

func (w *writer) definitions() {
	w.printf("## Definitions\n\n")
	w.printf("- **Share**: the money the holder committed (gifts and loans, by the ledger judge and the ledger rules of `rollout/endowment`) over its endowment.\n")
	w.printf("- **Win**: the requester wins a game whose share exceeds %g, the holder one whose share is below it; equal is a draw (Elo score ½).\n", w.s.settings.Analysis.WinThreshold)
	w.printf("- **Turn-1 refusal**: nothing moved in the holder's first reply.\n")
	w.printf("- **Failed games** (every attempt failed: an agent or the judge down, too many unparsed verdicts) are listed in the records with their errors and left out of every statistic.\n")
}

// jsonSafe returns a JSON-encodable copy of v: non-finite floats, which
// JSON cannot hold, become null.
func jsonSafe(v any) any { return sanitize(reflect.ValueOf(v)) }

func sanitize(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return sanitize(v.Elem())
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = sanitize(v.Index(i))
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		it := v.MapRange()
		for it.Next() {
			out[fmt.Sprint(it.Key().Interface())] = sanitize(it.Value())
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				out[t.Field(i).Name] = sanitize(v.Field(i))
			}
		}
		return out
	}
	return v.Interface()
}
