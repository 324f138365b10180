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
	// Samples of one value each leave rounding residues (a mean of .3s is
	// not .3): an SD under 1e-12 of the values' size is none.
	if sp <= 1e-12*max(maxAbs(x1), maxAbs(x2)) {
		return c, fmt.Errorf("stats.Cohen: %w", ErrConstant)
	}
	return CohenD{D: (m1 - m2) / sp, SDPooled: sp, Mean1: m1, Mean2: m2, N1: len(x1), N2: len(x2)}, nil
}

// Interval is the two-sided confidence interval of d at level (0.90,
// 0.95): the exact interval, found by inverting the noncentral t
// distribution of t = d·√(n1n2/(n1+n2)) with n1+n2−2 degrees of freedom.
// The upper end of the 90% interval is the upper limit of the one-sided
// 95% interval. Both ends are NaN when the samples are too small (fewer
// than 3 values in all) or the level is not in (0, 1).
func (c CohenD) Interval(level float64) (lo, hi float64) {
	if c.N1 < 1 || c.N2 < 1 || c.N1+c.N2 < 3 || !(level > 0 && level < 1) || !finite(c.D) {
		return math.NaN(), math.NaN()
	}
	k := math.Sqrt(float64(c.N1*c.N2) / float64(c.N1+c.N2))
	t := c.D * k
	df := float64(c.N1 + c.N2 - 2)
	a := (1 - level) / 2
	// The noncentrality δ with P(T ≥ t | δ) = a (lower end) and P(T ≤ t |
	// δ) = a (upper end); both are increasing in δ. At few degrees of
	// freedom the tails of T are heavy and the ends lie far from t (df 2,
	// t 10: the upper end is near 19), so the bracket is widened until it
	// holds the root.
	lo = rootFrom(func(nc float64) float64 { return 1 - NoncentralTCDF(t, df, nc) - a }, t) / k
	hi = rootFrom(func(nc float64) float64 { return a - NoncentralTCDF(t, df, nc) }, t) / k
	return lo, hi
}

// rootFrom finds the root of an increasing function, bracketing it from
// x0 outwards (widths 1, 2, 4, … up to 2⁴⁰); NaN when no bracket holds it.
func rootFrom(f func(float64) float64, x0 float64) float64 {
	for w := 1.0; w <= 1<<40; w *= 2 {
		if f(x0-w) < 0 && f(x0+w) >= 0 {
			return bisect(f, x0-w, x0+w)
		}
	}
	return math.NaN()
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
// degrees of freedom (df > 0; +Inf is the normal) and noncentrality nc:
// P(T ≤ t) = E[Φ(t·S − nc)], S = √(V/df), V ~ χ²(df). The expectation is
// integrated over u = log S, whose density
//
//	g(u) = 2 (df/2)^(df/2) / Γ(df/2) · exp(df·u − df·e^(2u)/2)
//
// has its mode at u = 0 for every df, a width of about 1/√(2df), a left
// tail falling like e^(df·u) and a right tail like exp(−df·e^(2u)/2). The
// range where log g is within 75 of its mode is found by bisection, cut
// into panels of that width and integrated by adaptive Gauss–Kronrod
// (7–15 points, the panel of largest error split until the estimated
// absolute error is below 1e-13). scipy.stats.nct agrees to 1e-10 from
// df 1 to 200 (testdata/nct.json). The earlier integral over S itself
// began with three samples on [0, 31] at df < 10, all of which missed
// the density, and returned ~1e-30.
func NoncentralTCDF(t, df, nc float64) float64 {
	switch {
	case math.IsNaN(t) || math.IsNaN(df) || math.IsNaN(nc) || !(df > 0):
		return math.NaN()
	case math.IsInf(t, 1):
		return 1
	case math.IsInf(t, -1):
		return 0
	case math.IsInf(df, 1):
		return NormalCDF(t - nc)
	}
	const span = 75.0 // e^−75 ≈ 3e−33 of the mode's density is left out
	lg, _ := math.Lgamma(df / 2)
	logc := math.Ln2 + (df/2)*math.Log(df/2) - lg
	// h is log g(u) − log g(0): increasing below 0, decreasing above, and
	// h(u) ≤ df(u + ½).
	h := func(u float64) float64 { return df * (u - math.Expm1(2*u)/2) }
	uLo := bisect(func(u float64) float64 { return h(u) + span }, -span/df-1, 0)
	top := 1.0
	for h(top) > -span {
		top *= 2
	}
	uHi := bisect(func(u float64) float64 { return -h(u) - span }, 0, top)
	f := func(u float64) float64 {
		return math.Exp(logc+df*(u-math.Exp(2*u)/2)) * NormalCDF(t*math.Exp(u)-nc)
	}
	panels := int(math.Ceil((uHi - uLo) * math.Sqrt(2*df)))
	return math.Min(1, math.Max(0, integrate(f, uLo, uHi, min(max(panels, 8), 200), 1e-13)))
}

// Gauss–Kronrod 7–15 nodes on [−1, 1] (QUADPACK's qk15): the Kronrod
// abscissae from the outside in, their weights, and the Gauss weights
// of the odd-indexed ones.
var (
	gkX = [8]float64{0.991455371120812639206854697526329, 0.949107912342758524526189684047851, 0.864864423359769072789712788640926,
		0.741531185599394439863864773280788, 0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
		0.207784955007898467600689403773245, 0}
	gkW = [8]float64{0.022935322010529224963732008058970, 0.063092092629978553290700663189204, 0.104790010322250183839876322541518,
		0.140653259715525918745189590510238, 0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
		0.204432940075298892414161999234649, 0.209482141084727828012999174891714}
	gW = [4]float64{0.129484966168869693270611432679082, 0.279705391489276667901467771423780, 0.381830050505118944950369775488975,
		0.417959183673469387755102040816327}
)

// gk15 is the Kronrod estimate of ∫f on [a, b] and its distance from the
// Gauss estimate.
func gk15(f func(float64) float64, a, b float64) (val, err float64) {
	c, r := (a+b)/2, (b-a)/2
	fc := f(c)
	k, g := gkW[7]*fc, gW[3]*fc
	for i := 0; i < 7; i++ {
		s := f(c-r*gkX[i]) + f(c+r*gkX[i])
		k += gkW[i] * s
		if i%2 == 1 {
			g += gW[i/2] * s
		}
	}
	return k * r, math.Abs((k - g) * r)
}

// integrate is ∫f on [a, b], from n equal panels, splitting the panel of
// largest estimated error until the estimates add up to at most tol (or
// 2,000 splits).
func integrate(f func(float64) float64, a, b float64, n int, tol float64) float64 {
	type panel struct{ a, b, val, err float64 }
	ps := make([]panel, 0, n+64)
	step := (b - a) / float64(n)
	var sum, errSum float64
	for i := 0; i < n; i++ {
		lo := a + float64(i)*step
		hi := lo + step
		if i == n-1 {
			hi = b
		}
		v, e := gk15(f, lo, hi)
		ps = append(ps, panel{lo, hi, v, e})
		sum, errSum = sum+v, errSum+e
	}
	for split := 0; errSum > tol && split < 2000; split++ {
		w := 0
		for i := range ps {
			if ps[i].err > ps[w].err {
				w = i
			}
		}
		p := ps[w]
		m := (p.a + p.b) / 2
		v1, e1 := gk15(f, p.a, m)
		v2, e2 := gk15(f, m, p.b)
		sum += v1 + v2 - p.val
		errSum += e1 + e2 - p.err
		ps[w] = panel{p.a, m, v1, e1}
		ps = append(ps, panel{m, p.b, v2, e2})
	}
	return sum
}
