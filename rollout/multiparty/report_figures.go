package multiparty

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
	"github.com/parleyhq/parley/stats"
)

// byGame returns, for the games gs, x = game number (from 1) and the
// interval of f over the series at each (a series' several continuations
// of one game, in a training run, are one observation).
func byGame(gs []game, scale float64, f func(game) float64) (x, y, lo, hi []float64) {
	at := map[int][]game{}
	for _, g := range gs {
		at[g.Game] = append(at[g.Game], g)
	}
	idx := make([]int, 0, len(at))
	for k := range at {
		idx = append(idx, k)
	}
	sort.Ints(idx)
	for _, k := range idx {
		iv := ci(at[k], scale, f)
		if iv.N == 0 {
			continue
		}
		x = append(x, float64(k+1))
		y = append(y, iv.Mean)
		h := iv.Half
		if math.IsNaN(h) {
			h = 0
		}
		lo, hi = append(lo, iv.Mean-h), append(hi, iv.Mean+h)
	}
	return x, y, lo, hi
}

// updating lists the conditions of gs that assess and update trust.
func updating(gs []game) []trust.Settings {
	var out []trust.Settings
	for _, c := range conditions(gs) {
		if c.Updates() {
			out = append(out, c)
		}
	}
	return out
}

// figures draws figures 2, 8 and 10 for one scenario type.
func figures(b *strings.Builder, gs []game, typ, dir string) error {
	conds := updating(gs)
	tl := scenario.TypeLabel(typ)
	if len(conds) > 0 {
		measures := []struct {
			title, ylabel string
			scale         float64
			ymin, ymax    float64
			lower, upper  float64 // the measure's range: its band is clipped to it
			f             func(game) float64
		}{
			{"Adversary detection", "Detection (%)", 100, 0, 100, 0, 100, func(g game) float64 { return g.Detection }},
			{"Misidentification", "Misidentification (%)", 100, 0, 100, 0, 100, func(g game) float64 { return g.Misidentification }},
			{"Trust separation", "Honest − adversary trust", 1, -0.25, 1, -1, 1, func(g game) float64 { return g.Separation }},
		}
		var panels []figure.Panel
		for _, method := range trust.Methods {
			var mc []trust.Settings
			for _, c := range conds {
				if c.Method == method {
					mc = append(mc, c)
				}
			}
			if len(mc) == 0 {
				continue
			}
			for _, m := range measures {
				pn := figure.Panel{Title: fmt.Sprintf("%s, %s (%s)", m.title, methodLabel(method), tl), XLabel: "Game", YLabel: m.ylabel, YMin: m.ymin, YMax: m.ymax, Dodge: 0.12}
				for _, c := range mc {
					x, y, lo, hi := byGame(sel(gs, typ, c.Label()), m.scale, m.f)
					clampBand(lo, hi, m.lower, m.upper)
					pn.Lines = append(pn.Lines, figure.BandLine{Label: c.Label(), X: x, Y: y, Lo: lo, Hi: hi, Color: figure.Palette(conditionOrder(c) % 3)})
				}
				panels = append(panels, pn)
			}
		}
		name := "fig2-" + typ + ".png"
		if err := figure.WritePanels(filepath.Join(dir, name), panels, 3, panelW, panelH); err != nil {
			return err
		}
		fmt.Fprintf(b, "![Figure 2 (%s)](%s)\n\n*Figure 2 (%s): adversary detection, misidentification and trust separation after each game of a series, one row per assessment method, a line per prompt condition; shading is the 95%% interval over series.*\n\n", tl, name, tl)
		if err := figure8(b, gs, typ, conds, dir); err != nil {
			return err
		}
	}
	return figure10(b, gs, typ, dir)
}

// figure8 draws trust in honest peers and in the adversary by game, one
// panel per condition.
func figure8(b *strings.Builder, gs []game, typ string, conds []trust.Settings, dir string) error {
	prior := 0.5
	var panels []figure.Panel
	for _, c := range conds {
		sub := sel(gs, typ, c.Label())
		x, y, lo, hi := byGame(sub, 1, func(g game) float64 { return g.HonestTrust })
		xa, ya, loa, hia := byGame(sub, 1, func(g game) float64 { return g.AdversaryTrust })
		panels = append(panels, figure.Panel{Title: c.Label(), XLabel: "Game", YLabel: "Trust", RefY: &prior, YMin: 0, YMax: 1, Legend: "right",
			Lines: []figure.BandLine{
				{Label: "honest peers", X: x, Y: y, Lo: lo, Hi: hi, Color: figure.Palette(0)},
				{Label: "adversary", X: xa, Y: ya, Lo: loa, Hi: hia, Color: figure.Palette(1), Dashed: true},
			}})
	}
	name := "fig8-" + typ + ".png"
	if err := figure.WritePanels(filepath.Join(dir, name), panels, 3, panelW-80, panelH-60); err != nil {
		return err
	}
	tl := scenario.TypeLabel(typ)
	fmt.Fprintf(b, "![Figure 8 (%s)](%s)\n\n*Figure 8 (%s): honest parties' mean trust in honest peers (solid) and in the adversary (dashed) after each game; the dotted line is the prior 0.5; shading is the 95%% interval over series.*\n\n", tl, name, tl)
	return nil
}

// figure10 draws honest parties' acceptance of proposals that meet their
// BATNA, by trust in the proposer: low (< 0.45) or high (> 0.55), per
// condition that shows trust; rates are per series, bars from fewer than
// three series are left out.
func figure10(b *strings.Builder, gs []game, typ, dir string) error {
	groups, bars := acceptanceBars(gs, typ)
	if len(groups) == 0 || !anyBar(bars) {
		return nil
	}
	name := "fig10-" + typ + ".png"
	tl := scenario.TypeLabel(typ)
	bc := figure.BarChart{Title: "Acceptance of BATNA-meeting proposals by trust in the proposer (" + tl + ")", YLabel: "Acceptance (%)",
		Groups: groups, Series: []string{"low trust (< 0.45)", "high trust (> 0.55)"}, Bars: [][]figure.Bar{bars[0], bars[1]}, YMin: 0, YMax: 100}
	if err := bc.WritePNG(filepath.Join(dir, name), max(640, 120+110*len(groups)), 440); err != nil {
		return err
	}
	fmt.Fprintf(b, "![Figure 10 (%s)](%s)\n\n*Figure 10 (%s): honest parties' acceptance of others' proposals that meet their BATNA when their trust in the proposer is low (< 0.45) or high (> 0.55); the neutral band is left out; bars from fewer than three series are omitted; error bars are 95%% intervals over series, clipped to 0–100 %%.*\n\n", tl, name, tl)
	return nil
}

// acceptanceBars are figure 10's bars for one scenario type: per
// condition that shows trust, the mean over series of each series'
// acceptance rate (%) in the low and the high trust band, with its 95%
// interval over series clipped to 0–100 % (a t interval over few series
// reaches past a rate's range), and Missing below three series.
func acceptanceBars(gs []game, typ string) (groups []string, bars [2][]figure.Bar) {
	for _, c := range conditions(gs) {
		if !c.Shown() {
			continue
		}
		per := map[string]*[2][2]int{} // series → band → accepted, votes
		for _, g := range sel(gs, typ, c.Label()) {
			if per[g.unit] == nil {
				per[g.unit] = &[2][2]int{}
			}
			for _, a := range g.Accept {
				band := -1
				switch {
				case a.Trust < LowTrust:
					band = 0
				case a.Trust > HighTrust:
					band = 1
				}
				if band < 0 {
					continue
				}
				per[g.unit][band][1]++
				if a.Accepted {
					per[g.unit][band][0]++
				}
			}
		}
		var pair [2]figure.Bar
		for band := 0; band < 2; band++ {
			var rates []float64
			for _, v := range per {
				if v[band][1] > 0 {
					rates = append(rates, 100*float64(v[band][0])/float64(v[band][1]))
				}
			}
			iv := stats.MeanCI(rates, level)
			lo, hi := []float64{iv.Mean - iv.Half}, []float64{iv.Mean + iv.Half}
			clampBand(lo, hi, 0, 100)
			pair[band] = figure.Bar{Value: iv.Mean, Lo: lo[0], Hi: hi[0], Missing: iv.N < 3}
		}
		if pair[0].Missing && pair[1].Missing {
			continue // no trust outside the neutral band (S0.5+P), or too few series
		}
		groups = append(groups, c.Label())
		bars[0], bars[1] = append(bars[0], pair[0]), append(bars[1], pair[1])
	}
	return groups, bars
}

func methodLabel(m string) string {
	return map[string]string{trust.MethodBRS: "BRS", trust.MethodRubric: "Rubric", trust.MethodFreeForm: "FF"}[m]
}

func anyBar(bars [2][]figure.Bar) bool {
	for _, bs := range bars {
		for _, b := range bs {
			if !b.Missing {
				return true
			}
		}
	}
	return false
}

// sensitivity replays every series' recorded assessments under other
// decay values (EMA λ 0.5, 0.7, 0.9; BRS γ 0.8, 0.9, 1.0), behaviour held
// fixed, and tabulates detection, misidentification and separation over
// all games.
func sensitivity(b *strings.Builder, gs []game) {
	bySeries := map[string][]game{}
	for _, g := range gs {
		if g.Settings.Updates() && g.o != nil {
			bySeries[g.Series] = append(bySeries[g.Series], g)
		}
	}
	type acc struct{ det, mis, sep []float64 }
	rows := map[string]*acc{}
	var keys []string
	for _, sg := range bySeries {
		sort.Slice(sg, func(i, j int) bool { return sg[i].Game < sg[j].Game })
		if !oneEach(sg) {
			continue // several continuations per game (a training run)
		}
		base := sg[0].o.Trust
		params := []float64{0.5, 0.7, 0.9}
		if base.Method == trust.MethodBRS {
			params = []float64{0.8, 0.9, 1.0}
		}
		for _, v := range params {
			s := base
			pname := "λ"
			if base.Method == trust.MethodBRS {
				s.Gamma, pname = v, "γ"
			} else {
				s.Lambda = v
			}
			var counts []map[string]map[string]trust.Evidence
			var signals []map[string]map[string]float64
			for _, g := range sg {
				counts = append(counts, g.o.Counts)
				signals = append(signals, g.o.Signals)
			}
			key := fmt.Sprintf("%s | %s = %.1f", base.Label(), pname, v)
			if rows[key] == nil {
				rows[key] = &acc{}
				keys = append(keys, key)
			}
			// One observation per series: its mean over its games.
			var det, mis, sep []float64
			for _, tr := range trust.Replay(s, sg[0].o.Names, counts, signals) {
				m := trust.MeanRanking(tr, sg[0].o.Adversary())
				det, mis, sep = append(det, 100*m.Detection), append(mis, 100*m.Misidentification), append(sep, m.Separation)
			}
			rows[key].det = append(rows[key].det, stats.MeanCI(det, level).Mean)
			rows[key].mis = append(rows[key].mis, stats.MeanCI(mis, level).Mean)
			rows[key].sep = append(rows[key].sep, stats.MeanCI(sep, level).Mean)
		}
	}
	if len(keys) == 0 {
		return
	}
	sort.Strings(keys)
	b.WriteString("### Trust sensitivity to the decay (seed figures 13, 14 and 16)\n\nEach series' recorded assessments (rubric and free-form signals, BRS observations) replayed under other decay values, behaviour held fixed; the configured value reproduces the observed trust. Det., MisID and Sep. average each series' games.\n\n")
	header(b, "Condition", "Decay", "Det. (%)", "MisID (%)", "Sep.")
	var tl tally
	for _, k := range keys {
		cond, param, _ := strings.Cut(k, " | ")
		a := rows[k]
		row(b, cond, param, tl.add(stats.MeanCI(a.det, level)).Format(1), tl.add(stats.MeanCI(a.mis, level)).Format(1), tl.add(stats.MeanCI(a.sep, level)).Format(3))
	}
	tl.unit(b, false)
}

// oneEach reports whether sorted games hold each game index once, from 0.
func oneEach(sg []game) bool {
	for i, g := range sg {
		if g.Game != i {
			return false
		}
	}
	return true
}

// trainingCurve draws honest parties' mean utility above BATNA and the
// agreement rate by training step, when the games span several steps.
func trainingCurve(b *strings.Builder, gs []game, dir string) error {
	steps := map[int32]bool{}
	for _, g := range gs {
		steps[g.step] = true
	}
	if len(steps) < 2 {
		return nil
	}
	curve := func(scale float64, f func(game) float64) (x, y, lo, hi []float64) {
		at := map[int32][]game{}
		for _, g := range gs {
			at[g.step] = append(at[g.step], g)
		}
		var ks []int
		for k := range at {
			ks = append(ks, int(k))
		}
		sort.Ints(ks)
		for _, k := range ks {
			iv := ci(at[int32(k)], scale, f)
			h := iv.Half
			if math.IsNaN(h) {
				h = 0
			}
			x, y, lo, hi = append(x, float64(k)), append(y, iv.Mean), append(lo, iv.Mean-h), append(hi, iv.Mean+h)
		}
		return
	}
	x, y, _, _ := curve(1, func(g game) float64 { return g.HonestSurplus })
	xt, yt, lot, hit := curve(1, func(g game) float64 { return g.TrainedSurplus })
	xa, ya, loa, hia := curve(100, func(g game) float64 { return g.Agree })
	clampBand(loa, hia, 0, 100)
	panels := []figure.Panel{
		{Title: "Honest parties' mean utility above BATNA", XLabel: "Training step", YLabel: "Utility − BATNA (0 without a deal)",
			Lines: []figure.BandLine{
				{Label: "trained honest parties", X: xt, Y: yt, Lo: lot, Hi: hit, Color: figure.Palette(0)},
				{Label: "all honest parties", X: x, Y: y, Color: figure.Palette(7), Dashed: true, HideBand: true},
			}},
		{Title: "Agreement rate", XLabel: "Training step", YLabel: "Agreement (%)", Legend: "none",
			Lines: []figure.BandLine{{X: xa, Y: ya, Lo: loa, Hi: hia, Color: figure.Palette(2)}}},
	}
	name := "fig-training.png"
	if err := figure.WritePanels(filepath.Join(dir, name), panels, 2, panelW, panelH); err != nil {
		return err
	}
	fmt.Fprintf(b, "![Training](%s)\n\n*Training: the trained honest parties' mean utility above BATNA (each party's surplus with a deal, 0 without; the dashed line is every honest party's, scripted ones included) and the agreement rate, per step; shading is the 95%% interval over the step's series (a series' continuations of its game are one observation).*\n\n", name)
	return nil
}

// clampBand clips a 95% band to the range its measure can take (a rate
// lies in 0–100 %): a t interval over few games reaches past it.
func clampBand(lo, hi []float64, lower, upper float64) {
	for i := range lo {
		lo[i] = min(max(lo[i], lower), upper)
	}
	for i := range hi {
		hi[i] = min(max(hi[i], lower), upper)
	}
}
