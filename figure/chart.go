package figure

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Line styles of the paper's figure 2: min dashed, mean solid, max
// dash-dotted.
const (
	StyleSolid      = "solid"
	StyleDashed     = "dashed"
	StyleDashDotted = "dash-dotted"
)

// Line is one series of a chart.
type Line struct {
	Label string
	// X and Y have the same length; a point whose Y is NaN or infinite
	// (undefined: the rounds to agreement of a step without agreement)
	// breaks the line there, leaving a gap, instead of being joined over.
	X, Y  []float64
	Style string // StyleSolid (default), StyleDashed or StyleDashDotted
	Color color.Color
	// Plain leaves out the markers a sparse series gets on its points (a
	// reference line).
	Plain bool
}

// Band is a shaded area of a chart between two series (a group's min
// and max around its mean).
type Band struct {
	Label  string
	X      []float64
	Lo, Hi []float64 // same length as X; NaN points are left out
	Color  color.Color
}

// Chart is a line chart written as a PNG of WidthPx × HeightPx pixels.
type Chart struct {
	Title, XLabel, YLabel string
	Lines                 []Line
	// Bands are drawn under the lines.
	Bands             []Band
	WidthPx, HeightPx int
	// IntegerX marks the x axis at integers and fits it to the data
	// (turns, probe counts) instead of starting it at 0.
	IntegerX bool
	// YMin and YMax, when YMax > YMin, are the limits of the values'
	// scale (a rate's 0–1, a win rate's 0–100 %): the y axis is fitted to
	// the data but never drawn beyond them.
	YMin, YMax float64
	// XMin and XMax, when XMax > XMin, are a range the x axis spans at
	// least (every chart of a run spans the run's steps, also one whose
	// series ends early).
	XMin, XMax float64
}

// Chart sizes used when none is given.
const (
	DefaultWidthPx  = 768
	DefaultHeightPx = 480
)

var (
	// colorSpread shades min–max bands (a Band's default).
	colorSpread = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x38}
	// ColorBand shades an interval band in the first palette colour.
	ColorBand = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0x40}
)

// WritePNG draws the chart and writes it to path, its legend in a strip
// below the data, where it covers no line.
func (c Chart) WritePNG(path string) error {
	p, items, err := c.plot()
	if err != nil {
		return fmt.Errorf("figure.Chart.WritePNG: %s: %w", filepath.Base(path), err)
	}
	return savePlot(p, items, path, c.WidthPx, c.HeightPx)
}

// plot builds the chart's plot and the items of its legend.
func (c Chart) plot() (*plot.Plot, []legendItem, error) {
	p := c.newPlot()
	var items []legendItem
	for _, b := range c.Bands {
		item, err := addChartBand(p, b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", b.Label, err)
		}
		items = append(items, item...)
	}
	n := 0
	for _, l := range c.Lines {
		drawn, item, err := addLine(p, l)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", l.Label, err)
		}
		n += drawn
		items = append(items, item...)
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("no finite points: %w", ErrNoData)
	}
	c.fitAxes(p)
	return p, items, nil
}

// newPlot is the chart's empty plot: title, axis labels, grid, legend.
func (c Chart) newPlot() *plot.Plot {
	p := newPlot(c.Title, c.XLabel, c.YLabel)
	p.Add(plotter.NewGrid())
	return p
}

// finite returns the points of x and y that are finite.
func finite(x, y []float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(x))
	for i := range x {
		if i < len(y) && !math.IsNaN(x[i]) && !math.IsNaN(y[i]) && !math.IsInf(y[i], 0) {
			xys = append(xys, plotter.XY{X: x[i], Y: y[i]})
		}
	}
	return xys
}

// segments splits the points of x and y into the runs between undefined
// points (NaN x or y, infinite y), in order; empty runs are left out.
func segments(x, y []float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range x {
		if i < len(y) && !math.IsNaN(x[i]) && !math.IsNaN(y[i]) && !math.IsInf(y[i], 0) {
			cur = append(cur, plotter.XY{X: x[i], Y: y[i]})
			continue
		}
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// addLine adds l, one polyline per run of defined points (an undefined
// point leaves a gap), and a marker on each point of a sparse series and
// on a point standing alone between gaps; it returns whether it drew
// anything and its legend entry (none without a label).
func addLine(p *plot.Plot, l Line) (drawn int, item []legendItem, err error) {
	runs := segments(l.X, l.Y)
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	if n == 0 {
		return 0, nil, nil
	}
	col := l.Color
	if col == nil {
		col = Palette(0)
	}
	var first *plotter.Line
	for _, xys := range runs {
		line, err := plotter.NewLine(xys)
		if err != nil {
			return 0, nil, err
		}
		line.LineStyle.Width = vg.Points(1.6)
		line.LineStyle.Color = col
		switch l.Style {
		case StyleDashed:
			line.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		case StyleDashDotted:
			line.LineStyle.Dashes = []vg.Length{vg.Points(8), vg.Points(3), vg.Points(1.5), vg.Points(3)}
		}
		p.Add(line)
		if first == nil {
			first = line
		}
		// Mark sparse points (evaluation steps) and lone points, which
		// draw no line.
		if (n <= sparsePoints || len(xys) == 1) && !l.Plain {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return 0, nil, err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(2.5)
			p.Add(sc)
		}
	}
	if l.Label != "" {
		item = []legendItem{{label: l.Label, thumbs: []plot.Thumbnailer{first}}}
	}
	return 1, item, nil
}

// addChartBand shades b; it returns its legend entry (none without a
// label or when nothing was shaded).
func addChartBand(p *plot.Plot, b Band) ([]legendItem, error) {
	lo, hi := finite(b.X, b.Lo), finite(b.X, b.Hi)
	if len(lo) != len(hi) {
		return nil, nil
	}
	col := b.Color
	if col == nil {
		col = colorSpread
	}
	poly, err := bandPolygon(lo, hi, col)
	if poly == nil || err != nil {
		return nil, err
	}
	p.Add(poly)
	if b.Label == "" {
		return nil, nil
	}
	return []legendItem{{label: b.Label, thumbs: []plot.Thumbnailer{poly}}}, nil
}

// fitAxes gives the data breathing room, 5 % above and below, within the
// scale's limits (YMin, YMax); the x axis starts at step 0, or fits
// integers (IntegerX), and spans XMin–XMax when they are set.
func (c Chart) fitAxes(p *plot.Plot) {
	span := p.Y.Max - p.Y.Min
	if span <= 0 {
		span = math.Max(math.Abs(p.Y.Max), 1)
	}
	p.Y.Min -= 0.05 * span
	p.Y.Max += 0.05 * span
	if c.YMax > c.YMin {
		p.Y.Min = math.Max(p.Y.Min, c.YMin)
		p.Y.Max = math.Min(p.Y.Max, c.YMax)
		if p.Y.Min >= p.Y.Max { // every point outside the scale: show the scale
			p.Y.Min, p.Y.Max = c.YMin, c.YMax
		}
	}
	if c.XMax > c.XMin {
		p.X.Min = math.Min(p.X.Min, c.XMin)
		p.X.Max = math.Max(p.X.Max, c.XMax)
	}
	if c.IntegerX {
		var xs []float64
		for _, l := range c.Lines {
			xs = append(xs, l.X...)
		}
		integerTicks(p, xs)
	} else if p.X.Min > 0 {
		p.X.Min = 0 // steps count from 0: round ticks
	}
}
