// Package figure draws the PNG figures of parley's reports with
// gonum/plot: line charts with styled series and shaded bands (Chart, the
// training report's), grids of line panels with 95% bands and a dotted
// reference line (WritePanels), grouped bar charts with error bars
// (BarChart), and the tournament's heatmap, interval chart, stacked bar,
// labelled scatter and band chart. It depends on no other parley package
// but the atomic writer, so any game's report can use it; each figure is
// written atomically.
package figure

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/parleyhq/parley/internal/fsutil"
)

// ErrNoData is wrapped by every figure's WritePNG when there is nothing to
// draw (no rows, no finite points, a budget whose parts are all zero):
// a report can then say so in a note instead of failing.
var ErrNoData = errors.New("nothing to draw")

// PaletteSize is the number of distinct colours Palette cycles through.
const PaletteSize = 12

// palette is a qualitative palette (Tableau's 10, then two more).
var palette = [PaletteSize]color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xff, 0x7f, 0x0e, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0x39, 0x3b, 0x79, 0xff}, {0x63, 0x79, 0x39, 0xff},
}

// Palette is the colour of the i-th series of a figure (cycled).
func Palette(i int) color.Color {
	return palette[((i%PaletteSize)+PaletteSize)%PaletteSize]
}

// BandLine is a line with an optional shaded band (a 95% interval): Lo and
// Hi, when set, have Y's length; NaN points are left out.
type BandLine struct {
	Label     string
	X, Y      []float64
	Lo, Hi    []float64
	Color     color.Color
	Dashed    bool
	HideBand  bool
	LineWidth float64 // points; 0: 1.6
}

// Panel is one plot of a figure.
type Panel struct {
	Title, XLabel, YLabel string
	Lines                 []BandLine
	// RefY, when set, draws a dotted horizontal reference line (a prior).
	RefY *float64
	// YMin and YMax fix the y range when both are set (YMax > YMin);
	// bands are clipped to it.
	YMin, YMax float64
	// Legend places the legend: "" top left, "none" none, "right" top right.
	Legend string
}

// WritePanels draws panels in a grid of cols columns, each panel wPx ×
// hPx pixels, into one PNG at path.
func WritePanels(path string, panels []Panel, cols, wPx, hPx int) error {
	if len(panels) == 0 {
		return fmt.Errorf("figure.WritePanels: %s: no panels: %w", path, ErrNoData)
	}
	cols = max(1, min(cols, len(panels)))
	rows := (len(panels) + cols - 1) / cols
	if wPx <= 0 || hPx <= 0 {
		wPx, hPx = 520, 380
	}
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p, err := pn.plot()
		if err != nil {
			return fmt.Errorf("figure.WritePanels: %s: panel %q: %w", path, pn.Title, err)
		}
		plots[i/cols][i%cols] = p
	}
	img := image.NewRGBA(image.Rect(0, 0, wPx*cols, hPx*rows))
	canvas := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] != nil {
				plots[r][c].Draw(canvases[r][c])
			}
		}
	}
	return writeImage(path, canvas)
}

func writeImage(path string, canvas *vgimg.Canvas) error {
	if err := fsutil.WriteWith(path, 0o644, func(w io.Writer) error { return png.Encode(w, canvas.Image()) }); err != nil {
		return fmt.Errorf("figure: write %s: %w", path, err)
	}
	return nil
}

func (pn Panel) plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = pn.Legend != "right"
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, l := range pn.Lines {
		lo, hi, err := pn.addLine(p, i, l)
		if err != nil {
			return nil, err
		}
		xmin, xmax = math.Min(xmin, lo), math.Max(xmax, hi)
	}
	if pn.RefY != nil && xmin <= xmax {
		ref, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: *pn.RefY}, {X: xmax, Y: *pn.RefY}})
		if err != nil {
			return nil, err
		}
		ref.LineStyle.Color = color.Gray{0x60}
		ref.LineStyle.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		p.Add(ref)
	}
	if pn.YMax > pn.YMin {
		p.Y.Min, p.Y.Max = pn.YMin, pn.YMax
	}
	return p, nil
}

// addLine draws line l (the i-th) of the panel, with its band, into p,
// and returns the x range it covers (+Inf, −Inf when it has no points).
func (pn Panel) addLine(p *plot.Plot, i int, l BandLine) (xmin, xmax float64, err error) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	col := l.Color
	if col == nil {
		col = Palette(i)
	}
	xys := make(plotter.XYs, 0, len(l.X))
	var band plotter.XYs
	var upper plotter.XYs
	for k := range l.X {
		if k >= len(l.Y) || !finiteF(l.X[k]) || !finiteF(l.Y[k]) {
			continue
		}
		xys = append(xys, plotter.XY{X: l.X[k], Y: l.Y[k]})
		xmin, xmax = math.Min(xmin, l.X[k]), math.Max(xmax, l.X[k])
		if !l.HideBand && k < len(l.Lo) && k < len(l.Hi) && finiteF(l.Lo[k]) && finiteF(l.Hi[k]) {
			lo, hi := l.Lo[k], l.Hi[k]
			if pn.YMax > pn.YMin { // a band is clipped to the panel's range
				lo, hi = math.Max(lo, pn.YMin), math.Min(hi, pn.YMax)
			}
			band = append(band, plotter.XY{X: l.X[k], Y: lo})
			upper = append(upper, plotter.XY{X: l.X[k], Y: hi})
		}
	}
	if len(xys) == 0 {
		return xmin, xmax, nil
	}
	if err := addBand(p, band, upper, col); err != nil {
		return xmin, xmax, err
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return xmin, xmax, err
	}
	line.LineStyle.Color = col
	line.LineStyle.Width = vg.Points(1.6)
	if l.LineWidth > 0 {
		line.LineStyle.Width = vg.Points(l.LineWidth)
	}
	if l.Dashed {
		line.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(line)
	if len(xys) <= sparsePoints {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return xmin, xmax, err
		}
		sc.GlyphStyle.Color = col
		sc.GlyphStyle.Radius = vg.Points(2)
		p.Add(sc)
	}
	if l.Label != "" && pn.Legend != "none" {
		p.Legend.Add(l.Label, line)
	}
	return xmin, xmax, nil
}

// addBand shades the polygon between the lower points and the upper
// ones (at least two) in a light tint of col.
func addBand(p *plot.Plot, lower, upper plotter.XYs, col color.Color) error {
	r, g, b, _ := col.RGBA()
	pg, err := bandPolygon(lower, upper, color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0x38})
	if pg != nil {
		p.Add(pg)
	}
	return err
}

// bandPolygon is the shaded area between lower and upper (points at the
// same x, in order), filled with col; nil when there are fewer than two
// points.
func bandPolygon(lower, upper plotter.XYs, col color.Color) (*plotter.Polygon, error) {
	if len(lower) < 2 {
		return nil, nil
	}
	ring := append(plotter.XYs(nil), lower...)
	for k := len(upper) - 1; k >= 0; k-- {
		ring = append(ring, upper[k])
	}
	pg, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil, err
	}
	pg.Color = col
	pg.LineStyle.Width = 0
	return pg, nil
}

func finiteF(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Bar is one bar with its interval; Missing leaves it out (too little data).
type Bar struct {
	Value, Lo, Hi float64
	Missing       bool
}

// BarChart is grouped bars: one group per Groups entry, one bar per
// Series entry in each group, with error bars from Lo to Hi.
type BarChart struct {
	Title, YLabel string
	Groups        []string
	Series        []string
	// Bars[s][g] is series s's bar in group g.
	Bars       [][]Bar
	YMin, YMax float64
}

// WritePNG draws the chart into path (wPx × hPx pixels).
func (bc BarChart) WritePNG(path string, wPx, hPx int) error {
	if wPx <= 0 || hPx <= 0 {
		wPx, hPx = 768, 480
	}
	p := plot.New()
	p.Title.Text = bc.Title
	p.Y.Label.Text = bc.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	w := vg.Points(float64(min(28, 360/max(1, len(bc.Groups)*len(bc.Series)))))
	drawn := 0
	for s, name := range bc.Series {
		vals := make(plotter.Values, len(bc.Groups))
		var errs plotter.XYs
		var yerr plotter.YErrors
		for g := range bc.Groups {
			b := bc.Bars[s][g]
			if b.Missing || !finiteF(b.Value) {
				continue
			}
			vals[g] = b.Value
			if finiteF(b.Lo) && finiteF(b.Hi) {
				errs = append(errs, plotter.XY{X: float64(g), Y: b.Value})
				yerr = append(yerr, struct{ Low, High float64 }{b.Value - b.Lo, b.Hi - b.Value})
			}
			drawn++
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("figure.BarChart.WritePNG: %w", err)
		}
		bars.Color = Palette(s)
		bars.LineStyle.Width = 0
		off := (float64(s) - float64(len(bc.Series)-1)/2) * float64(w)
		bars.Offset = vg.Length(off)
		p.Add(bars)
		p.Legend.Add(name, bars)
		if len(errs) > 0 {
			eb := &plotter.YErrorBars{XYs: shift(errs, 0), YErrors: yerr}
			eb.LineStyle.Width = vg.Points(1)
			eb.CapWidth = vg.Points(5)
			// Error bars sit on their bar: offset in data units is not
			// available, so draw them through a thin custom plotter.
			p.Add(offsetErrors{eb: eb, off: vg.Length(off)})
		}
	}
	if drawn == 0 {
		return fmt.Errorf("figure.BarChart.WritePNG: %s: no bars: %w", path, ErrNoData)
	}
	p.NominalX(bc.Groups...)
	if bc.YMax > bc.YMin {
		p.Y.Min, p.Y.Max = bc.YMin, bc.YMax
	}
	img := image.NewRGBA(image.Rect(0, 0, wPx, hPx))
	canvas := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	p.Draw(draw.Crop(draw.New(canvas), vg.Points(6), -vg.Points(10), vg.Points(4), -vg.Points(6)))
	return writeImage(path, canvas)
}

func shift(xys plotter.XYs, dx float64) plotter.XYs {
	out := make(plotter.XYs, len(xys))
	for i, p := range xys {
		out[i] = plotter.XY{X: p.X + dx, Y: p.Y}
	}
	return out
}

// offsetErrors draws error bars shifted by a fixed distance on the x axis,
// to sit on bars drawn with the same offset.
type offsetErrors struct {
	eb  *plotter.YErrorBars
	off vg.Length
}

// Plot implements plot.Plotter.
func (o offsetErrors) Plot(c draw.Canvas, p *plot.Plot) {
	c.Rectangle.Min.X += o.off
	c.Rectangle.Max.X += o.off
	o.eb.Plot(c, p)
}

// DataRange implements plot.DataRanger.
func (o offsetErrors) DataRange() (xmin, xmax, ymin, ymax float64) { return o.eb.DataRange() }

// Figure constants.
const (
	dpi          = 96
	sparsePoints = 30 // lines this short get a marker on every point
)
