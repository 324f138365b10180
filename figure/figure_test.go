package figure

import (
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
