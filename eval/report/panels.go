package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/stats"
)

// chartLine is one metric key drawn as a line of a panel.
type chartLine struct {
	key          metrics.Key
	label, style string
	color        color.Color // nil: by style (lineColor)
}

// panel is one chart of the report, drawn from metric keys.
type panel struct {
	file, title, ylab string
	lines             []chartLine
	// band shades between two keys (lo, hi), labelled bandLabel.
	band      [2]metrics.Key
	bandLabel string
	// raw draws the values as recorded (evaluation points), not as
	// running averages.
	raw bool
	// ref, if set, is a horizontal reference line at ref.y.
	ref *reference
	// zeroWhy says, in the note of a panel omitted because it is zero at
	// every step, what that usually means.
	zeroWhy string
	// limits are the values' scale (a rate's 0–1), when lo < hi: the y
	// axis is never drawn beyond it.
	limits [2]float64
}

// Scales the report's panels are drawn within.
var (
	rateLimits    = [2]float64{0, 1}
	percentLimits = [2]float64{0, 100}
)

// scoreLimits is the judge's scale, when the run says what it is.
func scoreLimits(s dataset.ScoreScale) [2]float64 {
	return [2]float64{s.Min, s.Max}
}

// reference is a horizontal line across a chart.
type reference struct {
	y     float64
	label string
}

var (
	colorAdapter = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // the step's adapter: red
	colorBase    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // the base model: blue
)

// trainingPanels are seed 000 figure 2's charts of the training set: the
// reward (the judge's score, labelled by scoreLabel) with its group
// min–max band, the agreement rate and the rounds to agreement.
func trainingPanels(scoreLabel string, score [2]float64) []panel {
	return []panel{
		{file: "reward.png", title: "(a) Reward per group, training set", ylab: "score (" + scoreLabel + ")", limits: score,
			lines: []chartLine{
				{key: metrics.KeyScoreMax, label: "group max", style: figure.StyleDashDotted},
				{key: metrics.KeyScoreMean, label: "group mean", style: figure.StyleSolid},
				{key: metrics.KeyScoreMin, label: "group min", style: figure.StyleDashed},
			},
			band: [2]metrics.Key{metrics.KeyScoreMin, metrics.KeyScoreMax}, bandLabel: "group min–max",
			zeroWhy: "no rollout scored above 0"},
		{file: "agreement_rate.png", title: "(b) Agreement rate, training set", ylab: "agreement rate", limits: rateLimits,
			lines: []chartLine{{key: metrics.KeyAgreementRate, style: figure.StyleSolid}}, zeroWhy: "no rollout reached agreement"},
		{file: "rounds_to_agreement.png", title: "(c) Average rounds to agreement, training set", ylab: "rounds",
			lines: []chartLine{{key: metrics.KeyRoundsToAgreement, style: figure.StyleSolid}}},
	}
}

// evalPanels are the curves of the evaluations during training: the
// step's adapter against the base model on the held-out prompts.
func evalPanels(scoreLabel string, score [2]float64) []panel {
	sides := func(key metrics.Key) []chartLine {
		return []chartLine{
			{key: metrics.EvalPrefix + key, label: "step's adapter", style: figure.StyleSolid, color: colorAdapter},
			{key: metrics.EvalPrefix + metrics.KeyBasePrefix + key, label: "base model", style: figure.StyleDashed, color: colorBase},
		}
	}
	return []panel{
		{file: "eval_win_rate.png", title: "(d) Win rate against the base model, held-out prompts", raw: true,
			ylab: "win rate, % of verdicts (tie = ½)", ref: &reference{50, "parity (50 %)"}, limits: percentLimits,
			lines:   []chartLine{{key: metrics.KeyEvalWinRate, label: "step's adapter vs. base", style: figure.StyleSolid, color: colorAdapter}},
			zeroWhy: "the base model won every verdict"},
		{file: "eval_score.png", title: "(e) Mean score, held-out prompts", raw: true, ylab: "score (" + scoreLabel + ")", limits: score,
			lines: sides(metrics.KeyScoreMean), zeroWhy: "no held-out rollout scored above 0"},
		{file: "eval_agreement_rate.png", title: "(f) Agreement rate, held-out prompts", raw: true, ylab: "agreement rate", limits: rateLimits,
			lines: sides(metrics.KeyAgreementRate), zeroWhy: "no held-out rollout of either side reached agreement"},
		{file: "eval_rounds_to_agreement.png", title: "(g) Average rounds to agreement, held-out prompts", raw: true, ylab: "rounds",
			lines: sides(metrics.KeyRoundsToAgreement)},
	}
}

// trainerPanels are the trainer's optimisation metrics, step by step.
func trainerPanels() []panel {
	one := func(key metrics.Key) []chartLine { return []chartLine{{key: key, style: figure.StyleSolid}} }
	return []panel{
		{file: "trainer_loss.png", title: "(h) Trainer loss", ylab: "loss", lines: one(metrics.KeyTrainerLoss)},
		{file: "trainer_kl.png", title: "(i) KL divergence", ylab: "KL (nats per token)", lines: []chartLine{
			{key: metrics.KeyTrainerKL, label: "approx. KL, updated vs. sampling policy", style: figure.StyleSolid, color: colorMean},
			{key: metrics.KeyTrainerKLRef, label: "KL to the reference model", style: figure.StyleDashed, color: colorMin},
		}, zeroWhy: "the update did not move the policy measurably"},
		{file: "trainer_entropy.png", title: "(j) Policy entropy on trained tokens", ylab: "entropy (nats per token)", lines: one(metrics.KeyTrainerEntropy)},
		{file: "trainer_grad_norm.png", title: "(k) Gradient norm (before clipping)", ylab: "gradient norm", lines: []chartLine{
			{key: metrics.KeyTrainerGradNorm, label: "mean over optimizer steps", style: figure.StyleSolid, color: colorMean},
			{key: metrics.KeyTrainerGradNormMax, label: "max", style: figure.StyleDashDotted, color: colorMax},
		}, zeroWhy: "every advantage was 0, so nothing was learned"},
		{file: "trainer_clip_frac.png", title: "(l) Clip fraction", ylab: "share of trained tokens clipped", lines: one(metrics.KeyTrainerClipFrac), limits: rateLimits,
			zeroWhy: "no token's probability ratio left the clip range, as with one optimizer step per batch (on-policy: ratio 1)"},
	}
}

// keys are the panel's metric keys.
func (c panel) keys() []metrics.Key {
	var out []metrics.Key
	for _, l := range c.lines {
		out = append(out, l.key)
	}
	return out
}

// zeroTol is how close to 0 a metric must stay at every point for its
// chart to be left out: below it a KL or a loss is floating-point noise
// (an on-policy step's approx. KL is ~1e-9), not something to read.
const zeroTol = 1e-6

// flatZero reports whether every recorded value of every key of c is
// within zeroTol of 0 (and there is at least one), with the number of
// points and whether they are all exactly 0.
func flatZero(m *Metrics, c panel) (zero bool, n int, exact bool) {
	exact = true
	for _, k := range c.keys() {
		_, ys := m.Series(k)
		for _, y := range ys {
			if math.Abs(y) > zeroTol || math.IsNaN(y) {
				return false, 0, false
			}
			exact = exact && y == 0
		}
		n += len(ys)
	}
	return n > 0, n, exact
}

// series is a key's values as c draws them: as recorded, or as running
// averages over w steps; a step whose value is undefined (NaN) stays NaN,
// a gap in the chart, not a value averaged from its neighbours.
func (c panel) series(m *Metrics, key metrics.Key, w int) (x, y []float64, ok bool) {
	x, raw, ok := m.SeriesGaps(key)
	if !ok || c.raw {
		return x, raw, ok
	}
	y, err := stats.RunningAverageBy(x, raw, float64(w))
	if err != nil { // steps are sorted by construction
		return nil, nil, false
	}
	for i, v := range raw {
		if math.IsNaN(v) {
			y[i] = math.NaN()
		}
	}
	return x, y, true
}

// chartTitle is the panel's title, saying how its values are averaged.
func (c panel) chartTitle(w int) string {
	if c.raw {
		return c.title
	}
	return fmt.Sprintf("%s (%d-step running average)", c.title, w)
}

// chart draws panel c of m as c.file and links it, or says in a note why
// it is left out: no data, or zero at every step.
func (g *generator) chart(m *Metrics, c panel, w int) error {
	if zero, n, exact := flatZero(m, c); zero {
		why := ""
		if c.zeroWhy != "" {
			why = " (" + c.zeroWhy + ")"
		}
		keys, verb := quoteKeys(c.keys(), m)
		if exact {
			g.note("%s %s 0 at all %d points%s: chart %s omitted", keys, verb, n, why, c.file)
		} else {
			g.note("%s %s within ±%g of 0 at all %d points (floating-point noise)%s: chart %s omitted", keys, verb, zeroTol, n, why, c.file)
		}
		return nil
	}
	lines, missing := g.panelLines(m, c, w)
	if len(lines) == 0 {
		g.note("%s: no data for %s, chart %s skipped", "metrics.jsonl", strings.Join(missing, ", "), c.file)
		return nil
	}
	if len(missing) > 0 && !c.raw {
		g.note("%s: no data for %s in %s", "metrics.jsonl", strings.Join(missing, ", "), c.file)
	}
	chart := g.figureChart(m, c, w, lines)
	if err := chart.WritePNG(filepath.Join(g.opts.OutDir, c.file)); err != nil {
		return err
	}
	g.printf("![%s](%s)\n\n", c.title, c.file)
	return nil
}

// figureChart is panel c drawn from lines: within its scale's limits, its
// x axis spanning every step of the run (a series that ends early, as the
// trainer's do when its batches are empty, ends inside the run's range).
func (g *generator) figureChart(m *Metrics, c panel, w int, lines []figure.Line) figure.Chart {
	chart := figure.Chart{
		Title: c.chartTitle(w), XLabel: "step", YLabel: c.ylab, Lines: lines,
		Bands: c.bands(m, w), WidthPx: g.opts.WidthPx, HeightPx: g.opts.HeightPx,
		YMin: c.limits[0], YMax: c.limits[1],
	}
	if n := len(m.Steps); n > 0 {
		chart.XMin, chart.XMax = float64(m.Steps[0]), float64(m.Steps[n-1])
	}
	if c.ref != nil {
		chart.Lines = append(chart.Lines, referenceLine(*c.ref, lines))
	}
	return chart
}

// panelLines are the lines of c that have data, and the keys that have
// none.
func (g *generator) panelLines(m *Metrics, c panel, w int) (lines []figure.Line, missing []string) {
	single := len(c.lines) == 1
	for _, l := range c.lines {
		x, y, ok := c.series(m, l.key, w)
		if !ok {
			missing = append(missing, "`"+string(l.key)+"`")
			continue
		}
		col := l.color
		if col == nil {
			col = lineColor(l.style, single)
		}
		lines = append(lines, figure.Line{Label: l.label, X: x, Y: y, Style: l.style, Color: col})
	}
	return lines, missing
}

// bands is c's shaded band, when it has one and both keys have data.
func (c panel) bands(m *Metrics, w int) []figure.Band {
	if c.band[0] == "" {
		return nil
	}
	x, lo, ok1 := c.series(m, c.band[0], w)
	xh, hi, ok2 := c.series(m, c.band[1], w)
	if !ok1 || !ok2 || len(x) != len(xh) {
		return nil
	}
	return []figure.Band{{Label: c.bandLabel, X: x, Lo: lo, Hi: hi}}
}

// referenceLine is ref drawn across the steps of lines.
func referenceLine(ref reference, lines []figure.Line) figure.Line {
	lo, hi := 0.0, 1.0
	for i, l := range lines {
		for j, x := range l.X {
			if (i == 0 && j == 0) || x < lo {
				lo = x
			}
			if (i == 0 && j == 0) || x > hi {
				hi = x
			}
		}
	}
	return figure.Line{Label: ref.label, X: []float64{lo, hi}, Y: []float64{ref.y, ref.y}, Style: figure.StyleDashed, Color: colorRef, Plain: true}
}

// quoteKeys lists the keys of keys that have data, in backticks, with
// the verb that agrees with them ("is", "are").
func quoteKeys(keys []metrics.Key, m *Metrics) (string, string) {
	var out []string
	for _, k := range keys {
		if m.Has(k) {
			out = append(out, "`"+string(k)+"`")
		}
	}
	if len(out) > 1 {
		return strings.Join(out, " and "), "are"
	}
	return strings.Join(out, " and "), "is"
}
