package report

import (
	"image/color"

	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/stats"
)

// The colours of the report's lines: a group's min, mean and max (the
// paper's figure 2), a single series, and reference lines.
var (
	colorMin  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	colorMean = color.RGBA{R: 0x20, G: 0x20, B: 0x20, A: 0xff} // near black
	colorMax  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
	colorOne  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorRef  = color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
)

// smoothed returns a key's series as a trailing running average over window
// steps (stats.RunningAverageBy), and whether the key has data.
func smoothed(m *Metrics, key metrics.Key, window int) (x, y []float64, ok bool) {
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

func lineColor(style string, single bool) color.Color {
	if single {
		return colorOne
	}
	switch style {
	case figure.StyleDashed:
		return colorMin
	case figure.StyleDashDotted:
		return colorMax
	}
	return colorMean
}
