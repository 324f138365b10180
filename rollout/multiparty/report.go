package multiparty

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
	"github.com/parleyhq/parley/stats"
)

// Figure sizes.
const (
	panelW, panelH = 520, 380
	level          = 0.95
)

// game is one played game as the report reads it.
type game struct {
	Episode
	o    *Outcome
	k    int // the series' index within its type and condition (-1: none)
	step int32
	// unit is the independent unit the game belongs to: its series (the
	// games of a series share agents and carry trust), or the game itself
	// when it is in none.
	unit string
}

// Report writes the game's section of `parley report` (rollout.Spec.Report)
// from a run's or a series run's rollouts: the seed's tables 1, 2, 3 and 6
// and figures 2, 8 and 10, a trust sensitivity table, and the training
// curve of honest utility above BATNA when the rollouts span steps.
func Report(in rollout.ReportInput) (string, error) {
	if in.Rollouts == nil {
		return "", nil
	}
	var rs []dataset.Rollout
	if err := in.Rollouts(func(r dataset.Rollout) error {
		if r.Env == Name {
			r.Sequences = nil // the report needs no tokens
			rs = append(rs, r)
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("multiparty.Report: %w", err)
	}
	return WriteReport(rs, in.Dir)
}

var seriesK = regexp.MustCompile(`-k([0-9]+)$`)

// games reads the successful games of rs.
func games(rs []dataset.Rollout) []game {
	var out []game
	for i := range rs {
		r := &rs[i]
		if r.Failed {
			continue
		}
		e, err := MeasureEpisode(r)
		if err != nil {
			continue
		}
		o, _ := ParseOutcome(r)
		k := -1
		if m := seriesK.FindStringSubmatch(r.Series); m != nil {
			k, _ = strconv.Atoi(m[1])
		}
		unit := r.Series
		if unit == "" {
			unit = "game " + r.RolloutID
		}
		out = append(out, game{Episode: e, o: o, k: k, step: r.Step, unit: unit})
	}
	return out
}

// WriteReport renders the section for rs, writing its PNGs into dir.
func WriteReport(rs []dataset.Rollout, dir string) (string, error) {
	gs := games(rs)
	var b strings.Builder
	b.WriteString("## Five-party negotiation (seed 002)\n\n")
	if len(gs) == 0 {
		b.WriteString("No completed multiparty games.\n")
		return b.String(), nil
	}
	types := typesOf(gs)
	fmt.Fprintf(&b, "%d games in %d series; scenario types %s; conditions %s. Intervals are 95%% Student t intervals over series, the independent unit (the games of a series share their agents and carry trust): each series' mean is one observation, in the tables over its games, in the figures at each game; differences between conditions are paired by series. Each table states its unit.\n\n",
		len(gs), countSeries(gs), strings.Join(labels(types, scenario.TypeLabel), ", "), strings.Join(conditionLabels(gs), ", "))
	table1(&b, gs, types)
	table2(&b, gs, types)
	table3(&b, gs, types)
	table6(&b, gs, types)
	sensitivity(&b, gs)
	for _, typ := range types {
		if err := figures(&b, gs, typ, dir); err != nil {
			return "", err
		}
	}
	if err := trainingCurve(&b, gs, dir); err != nil {
		return "", err
	}
	return b.String(), nil
}

func typesOf(gs []game) []string {
	var out []string
	for _, g := range gs {
		if !slices.Contains(out, g.Type) {
			out = append(out, g.Type)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return slices.Index(scenario.Types, out[i]) < slices.Index(scenario.Types, out[j])
	})
	return out
}

func countSeries(gs []game) int {
	seen := map[string]bool{}
	for _, g := range gs {
		seen[g.unit] = true
	}
	return len(seen)
}

func labels(xs []string, f func(string) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// conditionOrder sorts settings as the seed's tables do: the baselines,
// then each method's S, S→P, S+P.
func conditionOrder(s trust.Settings) int {
	base := map[string]int{trust.CondNone: 0, trust.CondS05P: 1, trust.CondSRandP: 2}
	if v, ok := base[s.Condition]; ok {
		return v
	}
	m := map[string]int{trust.MethodBRS: 0, trust.MethodRubric: 1, trust.MethodFreeForm: 2}[s.Method]
	c := map[string]int{trust.CondS: 0, trust.CondSToP: 1, trust.CondSP: 2}[s.Condition]
	return 10 + 3*m + c
}

// conditions lists the distinct settings of gs in table order.
func conditions(gs []game) []trust.Settings {
	seen := map[string]trust.Settings{}
	for _, g := range gs {
		seen[g.Condition] = g.Settings
	}
	out := make([]trust.Settings, 0, len(seen))
	for _, s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return conditionOrder(out[i]) < conditionOrder(out[j]) })
	return out
}

func conditionLabels(gs []game) []string {
	var out []string
	for _, s := range conditions(gs) {
		out = append(out, s.Label())
	}
	return out
}

// sel returns the games of a type and condition label.
func sel(gs []game, typ, cond string) []game {
	var out []game
	for _, g := range gs {
		if g.Type == typ && g.Condition == cond {
			out = append(out, g)
		}
	}
	return out
}

// seriesMeans returns, for each series of gs (each unit, in the order
// first seen), the mean of scale·f over its games where f is defined; a
// series where it is defined for no game is left out.
func seriesMeans(gs []game, scale float64, f func(game) float64) []float64 {
	sums := map[string]*[2]float64{}
	var order []string
	for _, g := range gs {
		v := scale * f(g)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if sums[g.unit] == nil {
			sums[g.unit] = &[2]float64{}
			order = append(order, g.unit)
		}
		sums[g.unit][0] += v
		sums[g.unit][1]++
	}
	out := make([]float64, len(order))
	for i, u := range order {
		out[i] = sums[u][0] / sums[u][1]
	}
	return out
}

// ci is the 95% interval of scale·f over the series of gs: each series'
// mean over its games is one observation (N counts series).
func ci(gs []game, scale float64, f func(game) float64) stats.Interval {
	return stats.MeanCI(seriesMeans(gs, scale, f), level)
}

// tally keeps the number of series behind each cell of a table, for the
// line under it that states the unit.
type tally struct{ lo, hi int }

// ci is ci, counted.
func (t *tally) ci(gs []game, scale float64, f func(game) float64) stats.Interval {
	return t.add(ci(gs, scale, f))
}

func (t *tally) add(iv stats.Interval) stats.Interval {
	if iv.N > 0 {
		if t.hi == 0 || iv.N < t.lo {
			t.lo = iv.N
		}
		t.hi = max(t.hi, iv.N)
	}
	return iv
}

// unit writes the line under a table that states what its intervals are
// over; paired says the table has paired differences.
func (t *tally) unit(b *strings.Builder, paired bool) {
	n := "no series"
	switch {
	case t.hi == 0:
	case t.lo == t.hi:
		n = fmt.Sprintf("%d series per cell", t.hi)
	default:
		n = fmt.Sprintf("%d–%d series per cell", t.lo, t.hi)
	}
	fmt.Fprintf(b, "\n*Unit: the series (%s). ± is the 95%% Student t interval over series: each series' mean over its games is one observation, since the games of a series share agents and carry trust.", n)
	if paired {
		b.WriteString(" A difference is paired by series: per series, the mean over the games both conditions played (the same scenarios in the same order) of the difference, then the t interval over series.")
	}
	b.WriteString("*\n\n")
}

func row(b *strings.Builder, cells ...string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func header(b *strings.Builder, cells ...string) {
	row(b, cells...)
	seps := make([]string, len(cells))
	for i := range seps {
		seps[i] = "---:"
	}
	seps[0] = "---"
	row(b, seps...)
}

// outcomeCells are table 2's five measures of gs.
func outcomeCells(t *tally, gs []game) []string {
	return []string{
		t.ci(gs, 100, func(g game) float64 { return g.Agree }).Format(1),
		t.ci(gs, 1, func(g game) float64 { return g.Surplus }).Format(2),
		t.ci(gs, 100, func(g game) float64 { return g.HBRejection }).Format(1),
		t.ci(gs, 100, func(g game) float64 { return g.Convergence }).Format(1),
		t.ci(gs, 1, func(g game) float64 { return g.RoundsPerDeal }).Format(2),
	}
}

// table1 is the seed's table 1: agreements and invalid agreements (% of
// games) without trust, per model playing the honest parties.
func table1(b *strings.Builder, gs []game, types []string) {
	b.WriteString("### Table 1: baseline agreement rates (%)\n\nEach entry: agreements / invalid agreements (an honest party voted for a deal below its BATNA), as % of games (the mean over series of each series' rate), under No trust; n counts series.\n\n")
	cells := []string{"Honest parties played by"}
	cells = append(cells, labels(types, scenario.TypeLabel)...)
	header(b, cells...)
	models := map[string]bool{}
	for _, g := range gs {
		if g.Settings.Condition == trust.CondNone {
			models[g.Model] = true
		}
	}
	if len(models) == 0 {
		row(b, append([]string{"(no No-trust games)"}, make([]string, len(types))...)...)
	}
	var tl tally
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		r := []string{m}
		for _, typ := range types {
			var sub []game
			for _, g := range sel(gs, typ, "No trust") {
				if g.Model == m {
					sub = append(sub, g)
				}
			}
			a := tl.ci(sub, 100, func(g game) float64 { return g.Agree })
			inv := tl.ci(sub, 100, func(g game) float64 { return g.Invalid })
			r = append(r, fmt.Sprintf("%s / %s (n = %d)", fmtMean(a), fmtMean(inv), a.N))
		}
		row(b, r...)
	}
	tl.unit(b, false)
}

func fmtMean(iv stats.Interval) string {
	if iv.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", iv.Mean)
}

// table2 is the seed's table 2: outcomes per condition, one column block
// per scenario type.
func table2(b *strings.Builder, gs []game, types []string) {
	b.WriteString("### Table 2: negotiation outcomes\n\n")
	fmt.Fprintf(b, "Column blocks: %s. Surplus is the honest parties' summed utility above BATNA (0 without a deal); HB rej. the share of hard bargainers' votes that are NO; Conv. the share of proposals that meet every honest BATNA; R/deal the round of the deal.\n\n",
		strings.Join(labels(types, scenario.TypeLabel), ", then "))
	cells := []string{"Condition"}
	for range types {
		cells = append(cells, "Agree (%) ↑", "Surplus ↑", "HB rej. (%) ↓", "Conv. (%) ↑", "R/deal ↓")
	}
	header(b, cells...)
	var tl tally
	for _, c := range conditions(gs) {
		r := []string{c.Label()}
		for _, typ := range types {
			r = append(r, outcomeCells(&tl, sel(gs, typ, c.Label()))...)
		}
		row(b, r...)
	}
	tl.unit(b, false)
}

// pairedAgree returns, for each series index k that conditions a and b
// both played in type typ, the agreement (×100) of each over the games
// both played (same game index): the pairs of a difference paired by
// series.
func pairedAgree(gs []game, typ, a, b string) (xa, xb []float64) {
	type key struct{ k, game int }
	first := map[key]float64{}
	for _, g := range sel(gs, typ, a) {
		if g.k >= 0 {
			first[key{g.k, g.Game}] = 100 * g.Agree
		}
	}
	sums := map[int]*[3]float64{} // k → sum a, sum b, games
	var ks []int
	for _, g := range sel(gs, typ, b) {
		v, ok := first[key{g.k, g.Game}]
		if !ok || g.k < 0 {
			continue
		}
		if sums[g.k] == nil {
			sums[g.k] = &[3]float64{}
			ks = append(ks, g.k)
		}
		sums[g.k][0] += v
		sums[g.k][1] += 100 * g.Agree
		sums[g.k][2]++
	}
	sort.Ints(ks)
	for _, k := range ks {
		s := sums[k]
		xa = append(xa, s[0]/s[2])
		xb = append(xb, s[1]/s[2])
	}
	return xa, xb
}

// table3 is the seed's table 3: the trust–agreement gap per method.
func table3(b *strings.Builder, gs []game, types []string) {
	b.WriteString("### Table 3: trust–agreement gap\n\n")
	b.WriteString("α: agreement (%) under S, S→P and S+P. Δ_{S→P} = α_{S→P} − α_S, δ_{S→P} = Δ_{S→P}/(100 − α_S), Δ_{S+P} = α_{S+P} − α_S, Δ_trust = α_{S+P} − α_{S→P}; differences are paired by series (± paired 95% interval over series).\n\n")
	cells := []string{"Method"}
	for range types {
		cells = append(cells, "α_S", "α_S→P", "α_S+P", "Δ_S→P", "δ_S→P", "Δ_S+P", "Δ_trust")
	}
	header(b, cells...)
	var tl tally
	for _, m := range trust.Methods {
		lab := func(c string) string { return trust.Settings{Method: m, Condition: c}.Label() }
		r := []string{methodLabel(m)}
		any := false
		for _, typ := range types {
			aS := tl.ci(sel(gs, typ, lab(trust.CondS)), 100, func(g game) float64 { return g.Agree })
			aSP := tl.ci(sel(gs, typ, lab(trust.CondSP)), 100, func(g game) float64 { return g.Agree })
			aStoP := tl.ci(sel(gs, typ, lab(trust.CondSToP)), 100, func(g game) float64 { return g.Agree })
			any = any || aS.N+aSP.N+aStoP.N > 0
			diff := func(x, y string) stats.Interval {
				xa, xb := pairedAgree(gs, typ, y, x)
				iv, _ := stats.PairedCI(xb, xa, level)
				return tl.add(iv)
			}
			dStoP := diff(lab(trust.CondSToP), lab(trust.CondS))
			delta := "–"
			if aS.N > 0 && aS.Mean < 100 && dStoP.N > 0 {
				delta = fmt.Sprintf("%.2f", dStoP.Mean/(100-aS.Mean))
			}
			r = append(r, fmtMean(aS), fmtMean(aStoP), fmtMean(aSP), signed(dStoP), delta,
				signed(diff(lab(trust.CondSP), lab(trust.CondS))), signed(diff(lab(trust.CondSP), lab(trust.CondSToP))))
		}
		if any {
			row(b, r...)
		}
	}
	tl.unit(b, true)
}

// signed formats a difference "+3.5 ± 13.8", in bold when its interval
// excludes zero.
func signed(iv stats.Interval) string {
	if iv.N == 0 {
		return "–"
	}
	s := fmt.Sprintf("%+.1f", iv.Mean)
	if !math.IsNaN(iv.Half) {
		s += fmt.Sprintf(" ± %.1f", iv.Half)
		if math.Abs(iv.Mean) > iv.Half {
			s = "**" + s + "**"
		}
	}
	return s
}

// table6 is the seed's table 6: trust formation and outcomes per
// condition, one table per scenario type.
func table6(b *strings.Builder, gs []game, types []string) {
	for _, typ := range types {
		fmt.Fprintf(b, "### Table 6: trust formation and negotiation outcomes, %s\n\nDet. (the adversary alone lowest in trust), MisID (an honest party lowest) and Sep. (mean trust in honest peers minus trust in the adversary) average the honest parties' trust after every game.\n\n", scenario.TypeLabel(typ))
		header(b, "Condition", "Det. (%) ↑", "MisID (%) ↓", "Sep. ↑", "Agree (%) ↑", "Surplus ↑", "HB rej. (%) ↓", "Conv. (%) ↑", "R/deal ↓")
		var tl tally
		for _, c := range conditions(gs) {
			sub := sel(gs, typ, c.Label())
			if len(sub) == 0 {
				continue
			}
			r := []string{c.Label(),
				tl.ci(sub, 100, func(g game) float64 { return g.Detection }).Format(1),
				tl.ci(sub, 100, func(g game) float64 { return g.Misidentification }).Format(1),
				tl.ci(sub, 1, func(g game) float64 { return g.Separation }).Format(2)}
			row(b, append(r, outcomeCells(&tl, sub)...)...)
		}
		tl.unit(b, false)
	}
}
