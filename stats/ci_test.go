package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestTQuantileScipy checks TQuantile and MeanCI against scipy's
// t.ppf and t.interval (testdata/gen_t.py).
func TestTQuantileScipy(t *testing.T) {
	b, err := os.ReadFile("testdata/t_quantiles.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Quantiles []struct {
			P  float64 `json:"p"`
			DF int     `json:"df"`
			Q  float64 `json:"q"`
		} `json:"quantiles"`
		Intervals []struct {
			Xs   []float64 `json:"xs"`
			Mean float64   `json:"mean"`
			Half float64   `json:"half"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	for _, q := range fx.Quantiles {
		if got := TQuantile(q.P, q.DF); math.Abs(got-q.Q) > 1e-9*math.Max(1, math.Abs(q.Q)) {
			t.Errorf("TQuantile(%v, %d) = %.12g, want %.12g", q.P, q.DF, got, q.Q)
		}
	}
	for _, iv := range fx.Intervals {
		got := MeanCI(iv.Xs, 0.95)
		if math.Abs(got.Mean-iv.Mean) > 1e-12 || math.Abs(got.Half-iv.Half) > 1e-9 {
			t.Errorf("MeanCI(%v) = %+v, want mean %v half %v", iv.Xs, got, iv.Mean, iv.Half)
		}
	}
}

func TestMeanCI(t *testing.T) {
	// 1, 2, 3: mean 2, s = 1, t(0.975, 2) = 4.302652729911275 → half 4.3027/√3.
	iv := MeanCI([]float64{1, math.NaN(), 2, 3, math.Inf(1)}, 0.95)
	if iv.N != 3 || iv.Mean != 2 || math.Abs(iv.Half-4.302652729911275/math.Sqrt(3)) > 1e-9 {
		t.Errorf("MeanCI = %+v", iv)
	}
	if got := iv.Format(2); got != "2.00 ± 2.48" {
		t.Errorf("Format = %q", got)
	}
	one := MeanCI([]float64{5}, 0.95)
	if one.Format(1) != "5.0" || !math.IsNaN(one.Half) {
		t.Errorf("one value: %+v %q", one, one.Format(1))
	}
	if MeanCI(nil, 0.95).Format(1) != "–" {
		t.Error("no values should format as –")
	}
	// Paired: differences 1, 1, 4 (the NaN pair left out): mean 2, s = √3.
	p, err := PairedCI([]float64{2, 3, 5, math.NaN()}, []float64{1, 2, 1, 0}, 0.95)
	if err != nil || p.N != 3 || p.Mean != 2 || math.Abs(p.Half-4.302652729911275*math.Sqrt(3)/math.Sqrt(3)) > 1e-9 {
		t.Errorf("PairedCI = %+v, %v", p, err)
	}
	if _, err := PairedCI([]float64{1}, nil, 0.95); err != ErrLength {
		t.Errorf("PairedCI of unequal lengths = %v", err)
	}
}
