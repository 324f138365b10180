package figure

import (
	"fmt"
	"image"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The figures of a tournament report (seed 001): a heatmap of a matrix,
// estimates with intervals, a stacked bar and a labelled scatter (a line
// with a band is a Chart). Each writes a PNG atomically.

var (
	colorGrey  = color.RGBA{R: 0xc8, G: 0xc8, B: 0xc8, A: 0xff}
	colorShade = color.NRGBA{R: 0x99, G: 0x99, B: 0x99, A: 0x50}
)

// savePlot draws p on a w × h pixel canvas (the default size when either
// is not positive), with the legend items in a strip below it, and writes
// it as a PNG at path.
func savePlot(p *plot.Plot, items []legendItem, path string, w, h int) error {
	canvas, c := newCanvas(w, h)
	drawWithLegend(c, p, items)
	return writeImage(path, canvas)
}

// newCanvas is a w × h pixel canvas (the default size when either is not
// positive) and its area inside the figures' margins.
func newCanvas(w, h int) (*vgimg.Canvas, draw.Canvas) {
	if w <= 0 || h <= 0 {
		w, h = DefaultWidthPx, DefaultHeightPx
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	canvas := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	margin := vg.Points(8)
	return canvas, draw.Crop(draw.New(canvas), margin, -2*margin, margin/2, -margin)
}

// drawWithLegend draws p in c above a strip holding the legend items
// (none: p takes all of c).
func drawWithLegend(c draw.Canvas, p *plot.Plot, items []legendItem) {
	plotArea, legendArea := splitLegend(c, legendHeight(items, c.Max.X-c.Min.X))
	p.Draw(plotArea)
	drawLegend(legendArea, items)
}

func newPlot(title, xlab, ylab string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xlab
	p.Y.Label.Text = ylab
	return p
}

func rect(x0, y0, x1, y1 float64, c color.Color) (*plotter.Polygon, error) {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return nil, err
	}
	poly.Color = c
	poly.LineStyle.Width = 0
	return poly, nil
}

func labels(xys plotter.XYs, strs []string, size vg.Length, xa text.XAlignment, c color.Color) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: strs})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(plotter.DefaultFont, size)
		l.TextStyle[i].XAlign = xa
		l.TextStyle[i].YAlign = text.YCenter
		if c != nil {
			l.TextStyle[i].Color = c
		}
	}
	return l, nil
}

// Heatmap is a matrix of values drawn as coloured cells, white at Min to
// red at Max, each cell printed with its value (Format, e.g. "%.0f"
// after multiplying by Scale); NaN cells are grey. Row 0 is drawn at the
// top; a colour scale from Min to Max (times Scale) stands at the right.
type Heatmap struct {
	Title, XLabel, YLabel string
	Rows, Cols            []string
	Values                [][]float64
	Min, Max, Scale       float64
	Format                string
	WidthPx, HeightPx     int
}

// WritePNG draws the heatmap.
func (hm Heatmap) WritePNG(path string) error {
	p := newPlot(hm.Title, hm.XLabel, hm.YLabel)
	nr, nc := len(hm.Rows), len(hm.Cols)
	if nr == 0 || nc == 0 {
		return fmt.Errorf("figure.Heatmap: %s: no cells: %w", path, ErrNoData)
	}
	scale := hm.scale()
	var xys plotter.XYs
	var strs []string
	for i := 0; i < nr; i++ {
		y := float64(nr - 1 - i)
		for j := 0; j < nc; j++ {
			v := math.NaN()
			if i < len(hm.Values) && j < len(hm.Values[i]) {
				v = hm.Values[i][j]
			}
			c := color.Color(colorGrey)
			if !math.IsNaN(v) {
				c = hm.color(v)
				xys = append(xys, plotter.XY{X: float64(j) + 0.5, Y: y + 0.5})
				strs = append(strs, fmt.Sprintf(hm.Format, v*scale))
			}
			cell, err := rect(float64(j), y, float64(j)+1, y+1, c)
			if err != nil {
				return err
			}
			cell.LineStyle.Width = vg.Points(0.5)
			cell.LineStyle.Color = color.White
			p.Add(cell)
		}
	}
	if len(xys) > 0 {
		size := vg.Points(math.Max(5, math.Min(10, 150/float64(max(nr, nc)))))
		l, err := labels(xys, strs, size, text.XCenter, color.Black)
		if err != nil {
			return err
		}
		p.Add(l)
	}
	var xt, yt []plot.Tick
	for j, c := range hm.Cols {
		xt = append(xt, plot.Tick{Value: float64(j) + 0.5, Label: c})
	}
	for i, r := range hm.Rows {
		yt = append(yt, plot.Tick{Value: float64(nr-1-i) + 0.5, Label: r})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = text.XRight
	p.X.Tick.Label.YAlign = text.YCenter
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, float64(nc), 0, float64(nr)
	bar, err := hm.colorBar()
	if err != nil {
		return err
	}
	canvas, c := newCanvas(hm.WidthPx, hm.HeightPx)
	// The scale takes a strip at the right, its bar as tall as the cells.
	main, strip := c, c
	main.Max.X -= colorBarWidth
	strip.Min.X = main.Max.X
	p.Draw(main)
	cells := p.DataCanvas(main)
	strip.Min.Y, strip.Max.Y = cells.Min.Y, cells.Max.Y
	bar.Draw(strip)
	return writeImage(path, canvas)
}

// colorBarWidth is the width of a heatmap's colour scale, its tick labels
// included.
const colorBarWidth = vg.Length(64)

// scale is the factor the heatmap's values are printed at (1 when unset).
func (hm Heatmap) scale() float64 {
	if hm.Scale == 0 {
		return 1
	}
	return hm.Scale
}

// color is the colour of a cell of value v: white at Min to red at Max,
// values beyond them at the nearer end.
func (hm Heatmap) color(v float64) color.Color {
	span := hm.Max - hm.Min
	if span <= 0 {
		span = 1
	}
	t := math.Min(1, math.Max(0, (v-hm.Min)/span))
	return color.RGBA{R: 0xff, G: uint8(255 - 200*t), B: uint8(255 - 215*t), A: 0xff}
}

// colorBar is the heatmap's colour scale: the colours from Min to Max, on
// a y axis in printed units (times Scale).
func (hm Heatmap) colorBar() (*plot.Plot, error) {
	const steps = 64
	lo, hi := hm.Min, hm.Max
	if hi <= lo {
		hi = lo + 1
	}
	s := hm.scale()
	p := plot.New()
	for k := range steps { // each step reaches to the top: no seams between them
		a, b := lo+(hi-lo)*float64(k)/steps, lo+(hi-lo)*float64(k+1)/steps
		cell, err := rect(0, a*s, 1, hi*s, hm.color((a+b)/2))
		if err != nil {
			return nil, err
		}
		p.Add(cell)
	}
	p.HideX()
	p.X.Min, p.X.Max = 0, 1
	p.Y.Min, p.Y.Max = math.Min(lo*s, hi*s), math.Max(lo*s, hi*s)
	p.Y.Tick.Label.Font.Size = vg.Points(8)
	p.Y.Padding = 0
	p.X.Padding = 0
	return p, nil
}

// IntervalBar is one interval of an estimate; Width is its line width in
// points (a thicker 90% inside a thinner 95%, for instance).
type IntervalBar struct {
	Lo, Hi float64
	Width  float64
}

// IntervalRow is one labelled estimate.
type IntervalRow struct {
	Label     string
	Point     float64
	Intervals []IntervalBar
}

// IntervalChart draws labelled estimates, top to bottom, with their
// intervals, an optional shaded band (an equivalence region) and a
// vertical reference line.
type IntervalChart struct {
	Title, XLabel     string
	Rows              []IntervalRow
	Band              *[2]float64
	Ref               *float64
	WidthPx, HeightPx int
}

// WritePNG draws the chart.
func (ic IntervalChart) WritePNG(path string) error {
	p := newPlot(ic.Title, ic.XLabel, "")
	n := len(ic.Rows)
	if n == 0 {
		return fmt.Errorf("figure.IntervalChart: %s: no rows: %w", path, ErrNoData)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range ic.Rows {
		for _, v := range append([]float64{r.Point}, flatten2(r.Intervals)...) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi {
		return fmt.Errorf("figure.IntervalChart: %s: no finite point or interval: %w", path, ErrNoData)
	}
	if ic.Band != nil {
		lo, hi = math.Min(lo, ic.Band[0]), math.Max(hi, ic.Band[1])
		b, err := rect(ic.Band[0], -0.5, ic.Band[1], float64(n)-0.5, colorShade)
		if err != nil {
			return err
		}
		p.Add(b)
	}
	if ic.Ref != nil {
		l, err := plotter.NewLine(plotter.XYs{{X: *ic.Ref, Y: -0.5}, {X: *ic.Ref, Y: float64(n) - 0.5}})
		if err != nil {
			return err
		}
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.LineStyle.Color = color.Gray{Y: 0x60}
		p.Add(l)
	}
	var ticks []plot.Tick
	var pts plotter.XYs
	for i, r := range ic.Rows {
		y := float64(n - 1 - i)
		ticks = append(ticks, plot.Tick{Value: y, Label: r.Label})
		for _, iv := range r.Intervals {
			if math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: iv.Lo, Y: y}, {X: iv.Hi, Y: y}})
			if err != nil {
				return err
			}
			l.LineStyle.Width = vg.Points(math.Max(iv.Width, 1))
			l.LineStyle.Color = Palette(0)
			p.Add(l)
		}
		if !math.IsNaN(r.Point) {
			pts = append(pts, plotter.XY{X: r.Point, Y: y})
		}
	}
	if len(pts) > 0 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Radius = vg.Points(3.5)
		sc.GlyphStyle.Color = color.Black
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
	}
	p.Add(plotter.NewGrid())
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	pad := 0.08 * math.Max(hi-lo, 1e-9)
	p.X.Min, p.X.Max = lo-pad, hi+pad
	p.Y.Min, p.Y.Max = -0.7, float64(n)-0.3
	h := ic.HeightPx
	if h == 0 {
		h = 110 + 42*n
	}
	return savePlot(p, nil, path, ic.WidthPx, h)
}

func flatten2(ivs []IntervalBar) []float64 {
	var out []float64
	for _, iv := range ivs {
		out = append(out, iv.Lo, iv.Hi)
	}
	return out
}

// Segment is one part of a stacked bar.
type Segment struct {
	Label string
	Value float64
}

// StackedBar draws one horizontal bar of segments (a budget), each
// labelled with its name and percentage of the total.
type StackedBar struct {
	Title             string
	Segments          []Segment
	WidthPx, HeightPx int
}

// WritePNG draws the bar.
func (sb StackedBar) WritePNG(path string) error {
	p := newPlot(sb.Title, "share of the variance (%)", "")
	total := 0.0
	for _, s := range sb.Segments {
		total += math.Max(0, s.Value)
	}
	if total <= 0 {
		return fmt.Errorf("figure.StackedBar: %s: every segment is zero: %w", path, ErrNoData)
	}
	x := 0.0
	for i, s := range sb.Segments {
		w := 100 * math.Max(0, s.Value) / total
		r, err := rect(x, 0, x+w, 1, Palette(i))
		if err != nil {
			return err
		}
		p.Add(r)
		p.Legend.Add(fmt.Sprintf("%s %.1f%%", s.Label, w), r)
		x += w
	}
	p.Legend.Top = true
	p.Legend.Left = false
	p.Y.Min, p.Y.Max = 0, 1.9
	p.X.Min, p.X.Max = 0, 100
	p.HideY()
	w, h := sb.WidthPx, sb.HeightPx
	if h == 0 {
		h = 260
	}
	return savePlot(p, nil, path, w, h)
}

// LabelledPoint is a point of a scatter with its label.
type LabelledPoint struct {
	X, Y  float64
	Label string
}

// Scatter draws labelled points, and Note under the title.
type Scatter struct {
	Title, XLabel, YLabel string
	Points                []LabelledPoint
	WidthPx, HeightPx     int
}

// WritePNG draws the scatter.
func (s Scatter) WritePNG(path string) error {
	p := newPlot(s.Title, s.XLabel, s.YLabel)
	p.Add(plotter.NewGrid())
	var xys plotter.XYs
	var strs []string
	for _, pt := range s.Points {
		if math.IsNaN(pt.X) || math.IsNaN(pt.Y) {
			continue
		}
		xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
		strs = append(strs, " "+pt.Label)
	}
	if len(xys) == 0 {
		return fmt.Errorf("figure.Scatter: %s: no finite points: %w", path, ErrNoData)
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Radius = vg.Points(4)
	sc.GlyphStyle.Color = Palette(0)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(sc)
	l, err := labels(xys, strs, vg.Points(8), text.XLeft, color.Gray{Y: 0x30})
	if err != nil {
		return err
	}
	l.Offset = vg.Point{X: vg.Points(4)}
	p.Add(l)
	p.X.Min, p.X.Max = math.Min(p.X.Min, 0)-0.02, math.Max(p.X.Max, 1)+0.15
	p.Y.Min, p.Y.Max = math.Min(p.Y.Min, 0)-0.02, math.Max(p.Y.Max, 0)*1.05+0.02
	return savePlot(p, nil, path, s.WidthPx, s.HeightPx)
}

// integerTicks marks the x axis at the integers of xs (at most 12 labels).
func integerTicks(p *plot.Plot, xs []float64) {
	if len(xs) == 0 {
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	step := math.Max(1, math.Ceil((hi-lo+1)/12))
	var ticks []plot.Tick
	for x := math.Ceil(lo); x <= hi; x += step {
		ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%g", x)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = lo-0.3, hi+0.3
}
