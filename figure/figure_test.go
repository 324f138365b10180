package figure

import (
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func pngSize(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img.Bounds().Dx(), img.Bounds().Dy()
}

func TestWritePanels(t *testing.T) {
	dir := t.TempDir()
	ref := 0.5
	line := BandLine{Label: "a", X: []float64{1, 2, 3}, Y: []float64{0.2, math.NaN(), 0.6}, Lo: []float64{0.1, 0, 0.4}, Hi: []float64{0.3, 1, 0.9}}
	panels := []Panel{{Title: "one", Lines: []BandLine{line}, RefY: &ref, YMin: 0, YMax: 1}, {Title: "two", Lines: []BandLine{line}}, {Title: "three"}}
	p := filepath.Join(dir, "p.png")
	if err := WritePanels(p, panels, 2, 300, 200); err != nil {
		t.Fatal(err)
	}
	if w, h := pngSize(t, p); w != 600 || h != 400 {
		t.Errorf("panels: %d×%d, want 600×400 (2 columns, 2 rows)", w, h)
	}
	if err := WritePanels(filepath.Join(dir, "none.png"), nil, 1, 0, 0); err == nil {
		t.Error("WritePanels with no panels: nil error")
	}
}

func TestBarChart(t *testing.T) {
	dir := t.TempDir()
	bc := BarChart{Title: "t", Groups: []string{"x", "y"}, Series: []string{"low", "high"},
		Bars: [][]Bar{{{Value: 50, Lo: 40, Hi: 60}, {Missing: true}}, {{Value: 80, Lo: 70, Hi: 90}, {Value: 20, Lo: math.NaN(), Hi: math.NaN()}}}}
	p := filepath.Join(dir, "b.png")
	if err := bc.WritePNG(p, 400, 300); err != nil {
		t.Fatal(err)
	}
	if w, h := pngSize(t, p); w != 400 || h != 300 {
		t.Errorf("bars: %d×%d", w, h)
	}
	empty := BarChart{Groups: []string{"x"}, Series: []string{"a"}, Bars: [][]Bar{{{Missing: true}}}}
	if err := empty.WritePNG(filepath.Join(dir, "e.png"), 0, 0); err == nil || !strings.Contains(err.Error(), "no bars") {
		t.Errorf("a chart without bars = %v", err)
	}
}

func TestChartWritePNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	c := Chart{Title: "t", XLabel: "x", YLabel: "y", WidthPx: 320, HeightPx: 200, Lines: []Line{
		{Label: "one point", X: []float64{1}, Y: []float64{2}},
		{Label: "with NaN", X: []float64{1, 2, 3}, Y: []float64{1, math.NaN(), 3}, Style: StyleDashed},
	}, Bands: []Band{{Label: "min–max", X: []float64{1, 2, 3}, Lo: []float64{0, 1, 2}, Hi: []float64{2, 3, math.NaN()}}}}
	if err := c.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	if w, h := pngSize(t, path); w != 320 || h != 200 {
		t.Errorf("chart is %d×%d, want 320×200", w, h)
	}
	empty := Chart{Lines: []Line{{X: []float64{1}, Y: []float64{math.NaN()}}}}
	if err := empty.WritePNG(path); !errors.Is(err, ErrNoData) {
		t.Errorf("WritePNG(no finite points) error = %v, want ErrNoData", err)
	}
}

// TestNothingToDraw: every figure with nothing to draw returns an error
// wrapping ErrNoData (a report's note), and writes no file.
func TestNothingToDraw(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	tests := []struct {
		name string
		draw func(path string) error
	}{
		{"chart without finite points", Chart{Lines: []Line{{X: []float64{1, 2}, Y: []float64{nan, nan}}}}.WritePNG},
		{"panels", func(p string) error { return WritePanels(p, nil, 1, 0, 0) }},
		{"bars", func(p string) error {
			return BarChart{Groups: []string{"x"}, Series: []string{"a"}, Bars: [][]Bar{{{Missing: true}}}}.WritePNG(p, 0, 0)
		}},
		{"heatmap", Heatmap{}.WritePNG},
		{"interval chart without rows", IntervalChart{}.WritePNG},
		{"interval chart of NaN", IntervalChart{Rows: []IntervalRow{{Label: "a", Point: nan, Intervals: []IntervalBar{{Lo: nan, Hi: nan}}}}}.WritePNG},
		{"stacked bar of zeros", StackedBar{Segments: []Segment{{"a", 0}, {"b", -0.1}}}.WritePNG},
		{"scatter of NaN", Scatter{Points: []LabelledPoint{{X: nan, Y: 1}}}.WritePNG},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		if err := tt.draw(path); !errors.Is(err, ErrNoData) {
			t.Errorf("%s: %v, want ErrNoData", tt.name, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: a file was written", tt.name)
		}
	}
}

// TestPanelIntegerTicks: a panel whose x values are whole numbers (games,
// steps) is marked at each of them, the first included.
func TestPanelIntegerTicks(t *testing.T) {
	tests := []struct {
		xs   []float64
		want []float64
	}{
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{[]float64{1, 5, 10, 15, 20}, []float64{1, 3, 5, 7, 9, 11, 13, 15, 17, 19}},
	}
	for _, tt := range tests {
		ys := make([]float64, len(tt.xs))
		p, err := Panel{Lines: []BandLine{{Label: "a", X: tt.xs, Y: ys}}}.plot()
		if err != nil {
			t.Fatal(err)
		}
		var got []float64
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if tk.Label != "" {
				got = append(got, tk.Value)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("ticks of x %v = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// TestPanelBandsUnderLines: every band is drawn before every line, so a
// later line's band does not tint an earlier line: the pure colour of the
// first line is still in the image.
func TestPanelBandsUnderLines(t *testing.T) {
	xs := []float64{0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, 23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5, 30.5}
	flat := func(y float64) []float64 {
		out := make([]float64, len(xs))
		for i := range out {
			out[i] = y
		}
		return out
	}
	red := palette[1]
	pn := Panel{YMin: 0, YMax: 1, Legend: LegendNone, Lines: []BandLine{
		{X: xs, Y: flat(0.5), Color: red, HideBand: true, LineWidth: 3},
		{X: xs, Y: flat(0.2), Lo: flat(0), Hi: flat(1), Color: palette[0]},
	}}
	path := filepath.Join(t.TempDir(), "bands.png")
	if err := WritePanels(path, []Panel{pn}, 1, 400, 300); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == red.R && uint8(g>>8) == red.G && uint8(bl>>8) == red.B {
				n++
			}
		}
	}
	if n < 100 {
		t.Errorf("%d pixels of the first line's pure colour: the second line's band covers it", n)
	}
}

// TestLegendBelow: the legend below a panel takes a strip under the
// plot's area, apart from it, its entries side by side and wrapped to the
// panel's width.
func TestLegendBelow(t *testing.T) {
	items := []legendItem{{label: "BRS (S)"}, {label: "BRS (S→P)"}, {label: "BRS (S+P)"}}
	offs, rows := legendLayout(items, vg.Points(400))
	if rows != 1 || offs[1].X <= offs[0].X || offs[2].X <= offs[1].X || offs[2].Y != 0 {
		t.Errorf("legend in 400 pt: %d rows, offsets %v; want one row, side by side", rows, offs)
	}
	if _, rows := legendLayout(items, vg.Points(120)); rows < 2 {
		t.Errorf("legend in 120 pt: %d rows, want it wrapped", rows)
	}
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: 400, Y: 300}}}
	h := legendHeight(items, 400)
	plotArea, legendArea := splitLegend(c, h)
	if legendArea.Max.Y > plotArea.Min.Y || legendArea.Min.Y != 0 || plotArea.Max.Y != 300 || h <= 0 {
		t.Errorf("split %v: plot %v, legend %v: want the legend strip below the plot, apart", h, plotArea.Rectangle, legendArea.Rectangle)
	}
	if legendHeight(nil, 400) != 0 {
		t.Error("a panel without a legend gives up a strip")
	}
}

// TestChartAxes: a chart's y axis stays within its scale's limits however
// many legend entries it has (the legend is drawn below the data, not in
// room added above it), and its x axis spans XMin–XMax when set.
func TestChartAxes(t *testing.T) {
	steps := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	rate := []float64{0, 0.1, 0.3, 0.5, 0.7, 0.9, 1, 1, 1, 1, 1, 1, 1, 1}
	pct := make([]float64, len(rate))
	for i, r := range rate {
		pct[i] = 100 * r
	}
	lines := func(y []float64, n int) []Line {
		var out []Line
		for i := range n {
			out = append(out, Line{Label: fmt.Sprintf("line %d", i), X: steps, Y: y})
		}
		return out
	}
	tests := []struct {
		name             string
		chart            Chart
		ymin, ymax, xmax float64
	}{
		{"rate, one line", Chart{Lines: lines(rate, 1), YMin: 0, YMax: 1}, 0, 1, 14},
		{"rate, four legend entries", Chart{Lines: lines(rate, 3), YMin: 0, YMax: 1,
			Bands: []Band{{Label: "band", X: steps, Lo: rate, Hi: rate}}}, 0, 1, 14},
		{"win rate in %", Chart{Lines: lines(pct, 2), YMin: 0, YMax: 100}, 0, 100, 14},
		{"a run of 24 steps", Chart{Lines: lines(rate, 1), YMin: 0, YMax: 1, XMin: 1, XMax: 24}, 0, 1, 24},
		{"no limits: padded", Chart{Lines: lines(rate, 1)}, -0.05, 1.05, 14},
	}
	for _, tt := range tests {
		p, items, err := tt.chart.plot()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if math.Abs(p.Y.Min-tt.ymin) > 1e-9 || math.Abs(p.Y.Max-tt.ymax) > 1e-9 {
			t.Errorf("%s: y axis %g to %g, want %g to %g", tt.name, p.Y.Min, p.Y.Max, tt.ymin, tt.ymax)
		}
		if p.X.Max != tt.xmax {
			t.Errorf("%s: x axis ends at %g, want %g", tt.name, p.X.Max, tt.xmax)
		}
		if want := len(tt.chart.Lines) + len(tt.chart.Bands); len(items) != want {
			t.Errorf("%s: %d legend entries below the chart, want %d", tt.name, len(items), want)
		}
	}
}

// TestHeatmapColorScale: a heatmap draws its colour scale, Min to Max:
// with every cell at Min (white) the colour of Max is still in the image.
func TestHeatmapColorScale(t *testing.T) {
	hm := Heatmap{Rows: []string{"a", "b"}, Cols: []string{"a", "b"}, Values: [][]float64{{0, 0}, {0, math.NaN()}},
		Min: 0, Max: 1, Scale: 100, Format: "%.0f", WidthPx: 400, HeightPx: 300}
	path := filepath.Join(t.TempDir(), "hm.png")
	if err := hm.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The colour of Max, to the nearest of the scale's steps.
	tr, tg, tb, _ := hm.color(hm.Max).RGBA()
	near := func(a, b uint32) bool { return max(a, b)-min(a, b) <= 8<<8 }
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r, tr) && near(g, tg) && near(bl, tb) {
				n++
			}
		}
	}
	if n < 20 {
		t.Errorf("%d pixels of the colour of Max in a heatmap whose cells are all at Min: no colour scale", n)
	}
	bar, err := hm.colorBar()
	if err != nil {
		t.Fatal(err)
	}
	if bar.Y.Min != 0 || bar.Y.Max != 100 {
		t.Errorf("colour scale spans %g to %g, want 0 to 100 (Min to Max times Scale)", bar.Y.Min, bar.Y.Max)
	}
}

// TestChartLineGap: an undefined point (NaN) breaks a chart's line, a gap
// there, instead of a line joined over it (seed 000's rounds to agreement
// of steps without agreement).
func TestChartLineGap(t *testing.T) {
	var xs, ys []float64
	for i := 0; i <= 40; i++ {
		y := 0.5
		if i >= 15 && i <= 25 {
			y = math.NaN()
		}
		xs, ys = append(xs, float64(i)), append(ys, y)
	}
	red := color.RGBA{R: 0xff, A: 0xff}
	c := Chart{WidthPx: 400, HeightPx: 300, Lines: []Line{
		{X: xs, Y: ys, Color: red},
		{X: []float64{0, 40}, Y: []float64{0, 1}, Color: color.RGBA{B: 0xff, A: 0xff}, Plain: true},
	}}
	path := filepath.Join(t.TempDir(), "gap.png")
	if err := c.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The row with the most red pixels is the red line's; its widest run
	// of other pixels between red ones is the gap.
	b := img.Bounds()
	isRed := func(x, y int) bool {
		r, g, bl, _ := img.At(x, y).RGBA()
		return r>>8 > 200 && g>>8 < 80 && bl>>8 < 80
	}
	bestRow, most := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		n := 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if isRed(x, y) {
				n++
			}
		}
		if n > most {
			bestRow, most = y, n
		}
	}
	gap, last := 0, -1
	for x := b.Min.X; x < b.Max.X; x++ {
		if isRed(x, bestRow) {
			if last >= 0 && x-last-1 > gap {
				gap = x - last - 1
			}
			last = x
		}
	}
	// Steps 15–25 of 0–40 are a quarter of the plot's width: ~80 px.
	if most < 100 || gap < 40 {
		t.Errorf("the line's row has %d red pixels and its widest break is %d px: want a gap of ~80 px over the undefined points", most, gap)
	}
}
