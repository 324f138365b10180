package stats

import (
	"fmt"
	"math"
)

// CohenD is the standardised mean difference of two samples.
type CohenD struct {
	// D is (mean1 − mean2)/SDPooled.
	D float64
	// SDPooled is √(((n1−1)s1² + (n2−1)s2²)/(n1+n2−2)).
	SDPooled     float64
	Mean1, Mean2 float64
	N1, N2       int
}

// Cohen returns Cohen's d of x1 against x2 with the pooled SD. Each sample
// needs two values and the pooled SD must not be 0.
func Cohen(x1, x2 []float64) (CohenD, error) {
	var c CohenD
	if len(x1) < 2 || len(x2) < 2 {
		return c, fmt.Errorf("stats.Cohen: samples of %d and %d: %w", len(x1), len(x2), ErrEmpty)
	}
	m1, s1 := MeanSD(x1)
	m2, s2 := MeanSD(x2)
	if !finite(m1) || !finite(m2) {
		return c, fmt.Errorf("stats.Cohen: %w", ErrNonFinite)
	}
	n1, n2 := float64(len(x1)), float64(len(x2))
	sp := math.Sqrt(((n1-1)*s1*s1 + (n2-1)*s2*s2) / (n1 + n2 - 2))
	if sp == 0 {
		return c, fmt.Errorf("stats.Cohen: %w", ErrConstant)
	}
	return CohenD{D: (m1 - m2) / sp, SDPooled: sp, Mean1: m1, Mean2: m2, N1: len(x1), N2: len(x2)}, nil
}

// Interval is the two-sided confidence interval of d at level (0.90,
// 0.95): the exact interval, found by inverting the noncentral t
// distribution of t = d·√(n1n2/(n1+n2)) with n1+n2−2 degrees of freedom.
// The upper end of the 90% interval is the upper limit of the one-sided
// 95% interval.
func (c CohenD) Interval(level float64) (lo, hi float64) {
	k := math.Sqrt(float64(c.N1*c.N2) / float64(c.N1+c.N2))
	t := c.D * k
	df := float64(c.N1 + c.N2 - 2)
	a := (1 - level) / 2
	// The noncentrality δ with P(T ≥ t | δ) = a (lower end) and P(T ≤ t |
	// δ) = a (upper end); both are monotone in δ.
	lo = bisect(func(nc float64) float64 { return 1 - NoncentralTCDF(t, df, nc) - a }, t-12, t+12) / k
	hi = bisect(func(nc float64) float64 { return a - NoncentralTCDF(t, df, nc) }, t-12, t+12) / k
	return lo, hi
}

// bisect finds the root of an increasing function on [lo, hi].
func bisect(f func(float64) float64, lo, hi float64) float64 {
	for i := 0; i < 200 && hi-lo > 1e-12*math.Max(1, math.Abs(lo)); i++ {
		mid := (lo + hi) / 2
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// TOST is a two one-sided t-tests equivalence test of two means with the
// pooled variance: H0 mean1 − mean2 ≤ −Delta, or ≥ Delta.
type TOST struct {
	// Bound is the equivalence bound in units of the pooled SD; Delta the
	// bound on the raw difference (Bound × SDPooled).
	Bound, Delta float64
	// TLower and PLower test the lower bound (H1: diff > −Delta), TUpper
	// and PUpper the upper (H1: diff < Delta); P is their maximum.
	TLower, PLower, TUpper, PUpper, P float64
	DF                                float64
}

// Equivalent reports whether both one-sided tests reject at alpha.
func (t TOST) Equivalent(alpha float64) bool { return t.P < alpha }

// Tost runs the equivalence test at bound (in pooled-SD units, seed 001's
// d = ±0.2 for example) on the samples c was computed from.
func (c CohenD) Tost(bound float64) TOST {
	n1, n2 := float64(c.N1), float64(c.N2)
	se := c.SDPooled * math.Sqrt(1/n1+1/n2)
	df := n1 + n2 - 2
	diff := c.Mean1 - c.Mean2
	delta := bound * c.SDPooled
	r := TOST{Bound: bound, Delta: delta, DF: df}
	r.TLower = (diff + delta) / se
	r.PLower = 1 - StudentTCDF(r.TLower, df)
	r.TUpper = (diff - delta) / se
	r.PUpper = StudentTCDF(r.TUpper, df)
	r.P = math.Max(r.PLower, r.PUpper)
	return r
}

// NormalCDF is the standard normal distribution function.
func NormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// StudentTCDF is the distribution function of Student's t with df degrees
// of freedom (df > 0), through the regularised incomplete beta function.
func StudentTCDF(t, df float64) float64 {
	if math.IsInf(t, 1) {
		return 1
	}
	if math.IsInf(t, -1) {
		return 0
	}
	x := df / (df + t*t)
	p := 0.5 * RegIncBeta(df/2, 0.5, x)
	if t > 0 {
		return 1 - p
	}
	return p
}

// RegIncBeta is the regularised incomplete beta function I_x(a, b), by its
// continued fraction (Lentz's method).
func RegIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 10000; m++ {
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

// NoncentralTCDF is the distribution function of the noncentral t with df
// degrees of freedom and noncentrality nc: P(T ≤ t) = E[Φ(t·S − nc)],
// S = √(V/df), V ~ χ²(df), integrated numerically over S (adaptive
// Simpson on the bulk of its density).
func NoncentralTCDF(t, df, nc float64) float64 {
	lg, _ := math.Lgamma(df / 2)
	// log density of S: log(2 df s) + log χ²_df(df s²).
	logf := func(s float64) float64 {
		v := df * s * s
		return math.Log(2*df*s) + (df/2-1)*math.Log(v) - v/2 - (df/2)*math.Ln2 - lg
	}
	f := func(s float64) float64 {
		if s <= 0 {
			return 0
		}
		return math.Exp(logf(s)) * NormalCDF(t*s-nc)
	}
	sd := 1 / math.Sqrt(2*df)
	lo := math.Max(0, 1-14*sd)
	hi := 1 + 14*sd
	if df < 10 {
		hi = 1 + 40*sd + 10
	}
	return math.Min(1, math.Max(0, simpson(f, lo, hi, 1e-12, 50)))
}

func simpson(f func(float64) float64, a, b, eps float64, depth int) float64 {
	fa, fm, fb := f(a), f((a+b)/2), f(b)
	whole := (b - a) / 6 * (fa + 4*fm + fb)
	return simpsonRec(f, a, b, fa, fm, fb, whole, eps, depth)
}

func simpsonRec(f func(float64) float64, a, b, fa, fm, fb, whole, eps float64, depth int) float64 {
	m := (a + b) / 2
	lm, rm := (a+m)/2, (m+b)/2
	flm, frm := f(lm), f(rm)
	left := (m - a) / 6 * (fa + 4*flm + fm)
	right := (b - m) / 6 * (fm + 4*frm + fb)
	if depth <= 0 || math.Abs(left+right-whole) <= 15*eps {
		return left + right + (left+right-whole)/15
	}
	return simpsonRec(f, a, m, fa, flm, fm, left, eps/2, depth-1) + simpsonRec(f, m, b, fm, frm, fb, right, eps/2, depth-1)
}
