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
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
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
	// Legend places the legend: "" below the plot, outside the data (its
	// entries side by side), "right" inside at the top right, "none" none.
	Legend string
	// Dodge shifts line i of n by (i − (n−1)/2)·Dodge on the x axis, so
	// that lines that coincide (conditions with the same outcome) stay
	// apart; 0 for none. Ticks stay at the unshifted x.
	Dodge float64
}

// Panel legend placements.
const (
	LegendBelow = ""
	LegendRight = "right"
	LegendNone  = "none"
)

// glyphs are the marker shapes of a panel's lines, by line index, so that
// lines drawn over each other stay apart.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

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
	legends := make([][]legendItem, len(panels))
	for i, pn := range panels {
		p, items, err := pn.build()
		if err != nil {
			return fmt.Errorf("figure.WritePanels: %s: panel %q: %w", path, pn.Title, err)
		}
		plots[i/cols][i%cols] = p
		legends[i] = items
	}
	img := image.NewRGBA(image.Rect(0, 0, wPx*cols, hPx*rows))
	canvas := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	// Every panel's plot gives up the same strip at its bottom (the
	// tallest legend's), so that the aligned data areas stay aligned.
	strip := vg.Length(0)
	for i := range panels {
		r, c := i/cols, i%cols
		strip = max(strip, legendHeight(legends[i], canvases[r][c].Max.X-canvases[r][c].Min.X))
	}
	for i := range panels {
		r, c := i/cols, i%cols
		cv := canvases[r][c]
		plotArea, legendArea := splitLegend(cv, strip)
		plots[r][c].Draw(plotArea)
		drawLegend(legendArea, legends[i])
	}
	return writeImage(path, canvas)
}

func writeImage(path string, canvas *vgimg.Canvas) error {
	if err := fsutil.WriteWith(path, 0o644, func(w io.Writer) error { return png.Encode(w, canvas.Image()) }); err != nil {
		return fmt.Errorf("figure: write %s: %w", path, err)
	}
	return nil
}

// legendItem is one entry of a legend drawn below a panel.
type legendItem struct {
	label  string
	thumbs []plot.Thumbnailer
}

// Legend geometry below a panel.
var (
	legendText  = text.Style{Color: color.Black, Font: font.From(plotter.DefaultFont, vg.Points(8)), Handler: plot.DefaultTextHandler}
	legendThumb = vg.Points(24)
	legendGap   = vg.Points(10)
	legendRow   = vg.Points(11)
	legendPad   = vg.Points(3)
)

// legendLayout places items side by side in rows of at most width,
// returning each item's offset from the strip's top left and the rows.
func legendLayout(items []legendItem, width vg.Length) (offsets []vg.Point, rows int) {
	if len(items) == 0 {
		return nil, 0
	}
	x, row := vg.Length(0), 0
	for _, it := range items {
		w := legendThumb + legendPad + legendText.Width(it.label)
		if x > 0 && x+w > width {
			x, row = 0, row+1
		}
		offsets = append(offsets, vg.Point{X: x, Y: vg.Length(row) * legendRow})
		x += w + legendGap
	}
	return offsets, row + 1
}

// legendHeight is the height of the strip items need below a panel of
// width w (0 without items).
func legendHeight(items []legendItem, w vg.Length) vg.Length {
	_, rows := legendLayout(items, w)
	if rows == 0 {
		return 0
	}
	return vg.Length(rows)*legendRow + 2*legendPad
}

// splitLegend splits a panel's canvas into the plot's area above and the
// legend's strip of height strip at the bottom; the two do not overlap.
func splitLegend(c draw.Canvas, strip vg.Length) (plotArea, legendArea draw.Canvas) {
	plotArea, legendArea = c, c
	plotArea.Min.Y += strip
	legendArea.Max.Y = c.Min.Y + strip
	return plotArea, legendArea
}

// drawLegend draws items side by side in the strip c, from its top left.
func drawLegend(c draw.Canvas, items []legendItem) {
	offsets, _ := legendLayout(items, c.Max.X-c.Min.X)
	for i, it := range items {
		top := c.Max.Y - legendPad - offsets[i].Y
		x := c.Min.X + offsets[i].X
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: top - legendRow}, Max: vg.Point{X: x + legendThumb, Y: top}}}
		for _, t := range it.thumbs {
			t.Thumbnail(&icon)
		}
		sty := legendText
		sty.YAlign = text.YCenter
		c.FillText(sty, vg.Point{X: x + legendThumb + legendPad, Y: top - legendRow/2}, it.label)
	}
}

// plot builds the panel's plot (without a legend below it).
func (pn Panel) plot() (*plot.Plot, error) {
	p, _, err := pn.build()
	return p, err
}

// build builds the panel's plot and, for a legend below it, the legend's
// items (the plot then carries none).
func (pn Panel) build() (*plot.Plot, []legendItem, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = pn.Legend != LegendRight
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	// Every band first, then every line: no band covers a line.
	for i, l := range pn.Lines {
		if err := pn.addBand(p, i, l); err != nil {
			return nil, nil, err
		}
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	var items []legendItem
	var xs []float64
	for i, l := range pn.Lines {
		lo, hi, thumbs, err := pn.addLine(p, i, l)
		if err != nil {
			return nil, nil, err
		}
		xmin, xmax = math.Min(xmin, lo), math.Max(xmax, hi)
		for k := range l.X {
			if k < len(l.Y) && finiteF(l.X[k]) && finiteF(l.Y[k]) {
				xs = append(xs, l.X[k])
			}
		}
		if l.Label == "" || thumbs == nil {
			continue
		}
		switch pn.Legend {
		case LegendNone:
		case LegendBelow:
			items = append(items, legendItem{label: l.Label, thumbs: thumbs})
		default:
			p.Legend.Add(l.Label, thumbs...)
		}
	}
	if pn.RefY != nil && xmin <= xmax {
		ref, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: *pn.RefY}, {X: xmax, Y: *pn.RefY}})
		if err != nil {
			return nil, nil, err
		}
		ref.LineStyle.Color = color.Gray{0x60}
		ref.LineStyle.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		p.Add(ref)
	}
	if integers(xs) {
		integerTicks(p, xs)
	}
	if pn.YMax > pn.YMin {
		p.Y.Min, p.Y.Max = pn.YMin, pn.YMax
	}
	return p, items, nil
}

// integers reports whether xs are all whole numbers (games, steps), and
// there is at least one.
func integers(xs []float64) bool {
	for _, x := range xs {
		if x != math.Trunc(x) {
			return false
		}
	}
	return len(xs) > 0
}

// dodge is the x shift of line i (see Panel.Dodge).
func (pn Panel) dodge(i int) float64 {
	return (float64(i) - float64(len(pn.Lines)-1)/2) * pn.Dodge
}

// color is the colour of line i.
func (l BandLine) color(i int) color.Color {
	if l.Color == nil {
		return Palette(i)
	}
	return l.Color
}

// addBand shades line l's band (the i-th line), clipped to the panel's
// range.
func (pn Panel) addBand(p *plot.Plot, i int, l BandLine) error {
	if l.HideBand {
		return nil
	}
	var lower, upper plotter.XYs
	for k := range l.X {
		if k >= len(l.Y) || k >= len(l.Lo) || k >= len(l.Hi) || !finiteF(l.X[k]) || !finiteF(l.Y[k]) || !finiteF(l.Lo[k]) || !finiteF(l.Hi[k]) {
			continue
		}
		lo, hi := l.Lo[k], l.Hi[k]
		if pn.YMax > pn.YMin { // a band is clipped to the panel's range
			lo, hi = math.Max(lo, pn.YMin), math.Min(hi, pn.YMax)
		}
		x := l.X[k] + pn.dodge(i)
		lower = append(lower, plotter.XY{X: x, Y: lo})
		upper = append(upper, plotter.XY{X: x, Y: hi})
	}
	alpha := uint8(0x38)
	if len(pn.Lines) > 2 {
		alpha = 0x26 // three bands over each other stay apart
	}
	return shade(p, lower, upper, l.color(i), alpha)
}

// addLine draws line l (the i-th) of the panel into p, and returns the x
// range it covers (+Inf, −Inf when it has no points) and its legend
// thumbnails (nil when it has no points).
func (pn Panel) addLine(p *plot.Plot, i int, l BandLine) (xmin, xmax float64, thumbs []plot.Thumbnailer, err error) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	col := l.color(i)
	xys := make(plotter.XYs, 0, len(l.X))
	for k := range l.X {
		if k >= len(l.Y) || !finiteF(l.X[k]) || !finiteF(l.Y[k]) {
			continue
		}
		xys = append(xys, plotter.XY{X: l.X[k] + pn.dodge(i), Y: l.Y[k]})
		xmin, xmax = math.Min(xmin, l.X[k]), math.Max(xmax, l.X[k])
	}
	if len(xys) == 0 {
		return xmin, xmax, nil, nil
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return xmin, xmax, nil, err
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
	thumbs = []plot.Thumbnailer{line}
	if len(xys) <= sparsePoints {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return xmin, xmax, nil, err
		}
		sc.GlyphStyle.Color = col
		sc.GlyphStyle.Radius = vg.Points(2.2)
		sc.GlyphStyle.Shape = glyphs[i%len(glyphs)]
		p.Add(sc)
		thumbs = append(thumbs, sc)
	}
	return xmin, xmax, thumbs, nil
}

// shade shades the polygon between the lower points and the upper
// ones (at least two) in a light tint of col (opacity alpha).
func shade(p *plot.Plot, lower, upper plotter.XYs, col color.Color, alpha uint8) error {
	r, g, b, _ := col.RGBA()
	pg, err := bandPolygon(lower, upper, color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), alpha})
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
// Series entry in each group, with error bars from Lo to Hi; the legend
// (the series) is drawn below the bars.
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
	var items []legendItem
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
		items = append(items, legendItem{label: name, thumbs: []plot.Thumbnailer{bars}})
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
	drawWithLegend(draw.Crop(draw.New(canvas), vg.Points(6), -vg.Points(10), vg.Points(4), -vg.Points(6)), p, items)
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
