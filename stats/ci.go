package stats

import (
	"math"
	"strconv"
)

// Interval is a mean with the half-width of its confidence interval: the
// interval is Mean ± Half. Half is NaN when N < 2.
type Interval struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Half float64 `json:"half"`
}

// Format writes the interval as "mean ± half" with prec decimals, "–"
// when N is 0, and the mean alone when N is 1.
func (iv Interval) Format(prec int) string {
	switch {
	case iv.N == 0 || math.IsNaN(iv.Mean):
		return "–"
	case iv.N == 1 || math.IsNaN(iv.Half):
		return formatF(iv.Mean, prec)
	}
	return formatF(iv.Mean, prec) + " ± " + formatF(iv.Half, prec)
}

func formatF(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

// MeanCI returns the mean of the finite values of xs (NaN and ±Inf are
// left out: an undefined measure of an episode) and the half-width of its
// two-sided confidence interval at level (0.95 for 95%), the Student t
// interval mean ± t(1−(1−level)/2, n−1)·s/√n with s the sample SD.
func MeanCI(xs []float64, level float64) Interval {
	var ys []float64
	for _, x := range xs {
		if finite(x) {
			ys = append(ys, x)
		}
	}
	m, sd := MeanSD(ys)
	iv := Interval{N: len(ys), Mean: m, Half: math.NaN()}
	if len(ys) >= 2 {
		iv.Half = TQuantile(1-(1-level)/2, len(ys)-1) * sd / math.Sqrt(float64(len(ys)))
	}
	return iv
}

// PairedCI is MeanCI of the differences a[i] − b[i] over the pairs where
// both are finite: the paired interval of a difference between
// conditions.
func PairedCI(a, b []float64, level float64) (Interval, error) {
	if len(a) != len(b) {
		return Interval{}, ErrLength
	}
	d := make([]float64, 0, len(a))
	for i := range a {
		if finite(a[i]) && finite(b[i]) {
			d = append(d, a[i]-b[i])
		}
	}
	return MeanCI(d, level), nil
}

// TQuantile returns the p-quantile of Student's t distribution with df
// degrees of freedom (df ≥ 1, 0 < p < 1), by bisection on StudentTCDF.
func TQuantile(p float64, df int) float64 {
	if df < 1 || !(p > 0 && p < 1) {
		return math.NaN()
	}
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -TQuantile(1-p, df)
	}
	hi := 1.0
	for StudentTCDF(hi, float64(df)) < p {
		hi *= 2
	}
	return bisect(func(t float64) float64 { return StudentTCDF(t, float64(df)) - p }, 0, hi)
}
