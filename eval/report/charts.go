package report

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/parleyhq/parley/eval/stats"
	"github.com/parleyhq/parley/internal/fsutil"
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
	X, Y  []float64 // same length; NaN points are left out
	Style string    // StyleSolid (default), StyleDashed or StyleDashDotted
	Color color.Color
}

// Chart is a line chart written as a PNG of WidthPx × HeightPx pixels.
type Chart struct {
	Title, XLabel, YLabel string
	Lines                 []Line
	WidthPx, HeightPx     int
	// IntegerX marks the x axis at integers and fits it to the data
	// (turns, probe counts) instead of starting it at 0.
	IntegerX bool
}

// Chart sizes used when none is given.
const (
	DefaultWidthPx  = 768
	DefaultHeightPx = 480
	dpi             = 96
	sparsePoints    = 30 // series this short get a marker on every point
)

var (
	colorMin  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	colorMean = color.RGBA{R: 0x20, G: 0x20, B: 0x20, A: 0xff} // near black
	colorMax  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
	colorOne  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
)

// WritePNG draws the chart and writes it to path.
func (c Chart) WritePNG(path string) error {
	w, h := c.WidthPx, c.HeightPx
	if w <= 0 || h <= 0 {
		w, h = DefaultWidthPx, DefaultHeightPx
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(4)
	p.Legend.ThumbnailWidth = vg.Points(36)
	p.Legend.Padding = vg.Points(3)
	n, legend := 0, 0
	for _, l := range c.Lines {
		xys := make(plotter.XYs, 0, len(l.X))
		for i := range l.X {
			if i < len(l.Y) && !math.IsNaN(l.X[i]) && !math.IsNaN(l.Y[i]) && !math.IsInf(l.Y[i], 0) {
				xys = append(xys, plotter.XY{X: l.X[i], Y: l.Y[i]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("report.Chart.WritePNG: %s: %w", l.Label, err)
		}
		line.LineStyle.Width = vg.Points(1.6)
		line.LineStyle.Color = l.Color
		if line.LineStyle.Color == nil {
			line.LineStyle.Color = colorOne
		}
		switch l.Style {
		case StyleDashed:
			line.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		case StyleDashDotted:
			line.LineStyle.Dashes = []vg.Length{vg.Points(8), vg.Points(3), vg.Points(1.5), vg.Points(3)}
		}
		p.Add(line)
		if len(xys) <= sparsePoints { // mark sparse points (evaluation steps; a single point draws no line)
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("report.Chart.WritePNG: %s: %w", l.Label, err)
			}
			sc.GlyphStyle.Color = line.LineStyle.Color
			sc.GlyphStyle.Radius = vg.Points(2.5)
			p.Add(sc)
		}
		if l.Label != "" {
			p.Legend.Add(l.Label, line)
			legend++
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("report.Chart.WritePNG: %s: no data", filepath.Base(path))
	}
	// Breathing room: 5 % above and below the data, and room at the top for
	// the legend (top left) so that it does not cover the lines.
	span := p.Y.Max - p.Y.Min
	if span <= 0 {
		span = math.Max(math.Abs(p.Y.Max), 1)
	}
	p.Y.Min -= 0.05 * span
	p.Y.Max += 0.05 * span
	if legend > 0 {
		p.Y.Max += span * (0.04 + 0.07*float64(legend))
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
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	canvas := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	margin := vg.Points(8)
	p.Draw(draw.Crop(draw.New(canvas), margin, -2*margin, margin/2, -margin))
	if err := fsutil.WriteWith(path, 0o644, func(w io.Writer) error { return png.Encode(w, canvas.Image()) }); err != nil {
		return fmt.Errorf("report.Chart.WritePNG: %w", err)
	}
	return nil
}

// smoothed returns a key's series as a trailing running average over window
// steps (stats.RunningAverageBy), and whether the key has data.
func smoothed(m *Metrics, key string, window int) (x, y []float64, ok bool) {
	x, raw := m.Series(key)
	if len(x) == 0 {
		return nil, nil, false
	}
	y, err := stats.RunningAverageBy(x, raw, float64(window))
	if err != nil { // steps are sorted by construction
		return nil, nil, false
	}
	return x, y, true
}

// dynamicsCharts are the three charts of seed 000 figure 2 for the keys
// under prefix ("" for the training set, EvalPrefix for the evaluation set).
type dynamicsChart struct {
	file  string
	title string
	ylab  string
	lines []struct{ key, label, style string }
}

func dynamicsCharts(prefix, scoreLabel string) []dynamicsChart {
	set, file := "training set", ""
	if prefix == EvalPrefix {
		set, file = "evaluation set", "eval_"
	}
	return []dynamicsChart{
		{file: file + "ca_scores.png", title: "(a) judge score, " + set, ylab: "score (" + scoreLabel + ")",
			lines: []struct{ key, label, style string }{
				{prefix + KeyScoreMax, "group max", StyleDashDotted},
				{prefix + KeyScoreMean, "group mean", StyleSolid},
				{prefix + KeyScoreMin, "group min", StyleDashed},
			}},
		{file: file + "agreement_rate.png", title: "(b) Agreement rate, " + set, ylab: "agreement rate",
			lines: []struct{ key, label, style string }{{prefix + KeyAgreementRate, "", StyleSolid}}},
		{file: file + "rounds_to_agreement.png", title: "(c) Average rounds to agreement, " + set, ylab: "rounds",
			lines: []struct{ key, label, style string }{{prefix + KeyRoundsToAgreement, "", StyleSolid}}},
	}
}

func lineColor(style string, single bool) color.Color {
	if single {
		return colorOne
	}
	switch style {
	case StyleDashed:
		return colorMin
	case StyleDashDotted:
		return colorMax
	}
	return colorMean
}
