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
// degrees of freedom (df ≥ 1, 0 < p < 1), by bisection on its CDF.
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
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < p {
		hi *= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCDF is Student's t CDF: for t ≥ 0, 1 − I_x(df/2, 1/2)/2 with
// x = df/(df + t²).
func tCDF(t float64, df int) float64 {
	v := float64(df)
	x := v / (v + t*t)
	tail := 0.5 * regIncBeta(v/2, 0.5, x)
	if t >= 0 {
		return 1 - tail
	}
	return tail
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (Lentz's method).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaCF(b, a, 1-x)/b
	}
	return front * betaCF(a, b, x) / a
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 1000; m++ {
		fm := float64(m)
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return h
}
