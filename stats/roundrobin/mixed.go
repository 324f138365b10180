package roundrobin

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Mixed is a REML fit of y = β0 + β1·framing + u_holder + v_requester + e,
// with crossed random intercepts u ~ N(0, σ²_h), v ~ N(0, σ²_r): seed
// 001's specification (A), in which the matchup is part of the residual.
// With one framing only the model has no β1 (NoFraming).
type Mixed struct {
	// Holder, Requester and Residual are the variances σ²_h, σ²_r, σ².
	Holder, Requester, Residual float64
	// Intercept and FramingCoef are the fixed effects (framing coded 0/1;
	// FramingCoef is 0 without a framing term).
	Intercept, FramingCoef float64
	// FramingCoefVar is the sampling variance of the framing coefficient,
	// σ²·[(X'V⁻¹X)⁻¹]₁₁ at the REML estimate.
	FramingCoefVar float64
	// Framing is the variance the framing term adds over the games,
	// estimated without bias as MoM's is: p(1−p)·(β̂1² − Var β̂1), p the
	// share of framing-1 games (β̂1²·p(1−p) alone would count the
	// coefficient's sampling noise as framing variance). It may be
	// negative; shares count it as zero.
	Framing float64
	// NoFraming reports that only one framing was played: the model was
	// fitted without the framing term and Framing is 0.
	NoFraming bool
	// Deviance is the REML criterion at the optimum, −2 × the REML
	// log-likelihood (lme4's; statsmodels' llf is −Deviance/2).
	Deviance float64
	// Converged reports that the optimiser stopped at a minimum;
	// Singular that a variance is on the boundary (zero).
	Converged, Singular bool
	// Evaluations of the REML criterion.
	Evaluations int
}

// Budget returns the fit as a budget (matchup in the residual).
func (f Mixed) Budget() Budget {
	return Budget{Holder: f.Holder, Requester: f.Requester, Framing: f.Framing, Residual: f.Residual, Mean: f.Intercept, NoFraming: f.NoFraming}
}

// ErrNotConverged is returned (wrapped) by FitMixed when the REML
// optimisation does not converge.
var ErrNotConverged = errors.New("the REML fit did not converge")

// FitMixed fits the crossed random intercepts by REML: the criterion is
// profiled over the fixed effects and the residual variance (Bates et
// al. 2015, lme4), and minimised over the two relative standard
// deviations θ = (σ_h/σ, σ_r/σ) by Nelder–Mead from three starts. With one
// framing only it is fitted without the framing term. A design whose
// outcomes are all equal, or in which holder and requester cannot be told
// apart, is an error (ErrNoVariance, ErrConfounded).
func FitMixed(cells []Cell) (Mixed, error) {
	f, err := fitMixed(cells)
	if err != nil {
		return f, fmt.Errorf("roundrobin.FitMixed: %w", err)
	}
	return f, nil
}

// mixedStats are the sufficient statistics of the model; px is the
// number of fixed effects (2, or 1 without a framing term).
type mixedStats struct {
	q, nh, n, px  int
	ZtZ           *mat.SymDense // q×q
	ZtX           *mat.Dense    // q×px
	XtX           *mat.SymDense // px×px
	Zty           *mat.VecDense // q
	Xty           *mat.VecDense // px
	yty, framing1 float64
}

func newMixedStats(cells []Cell) (*mixedStats, error) {
	hIdx, rIdx := map[int]int{}, map[int]int{}
	for _, c := range cells {
		if _, ok := hIdx[c.Holder]; !ok {
			hIdx[c.Holder] = len(hIdx)
		}
		if _, ok := rIdx[c.Requester]; !ok {
			rIdx[c.Requester] = len(rIdx)
		}
	}
	nh, nr := len(hIdx), len(rIdx)
	if nh < 2 || nr < 2 {
		return nil, fmt.Errorf("%d holders and %d requesters: need at least 2 of each", nh, nr)
	}
	if err := checkDesign(cells); err != nil {
		return nil, err
	}
	n, framing1 := 0, 0
	for _, c := range cells {
		for _, g := range c.Games {
			n++
			framing1 += g.Framing
		}
	}
	if n <= 2 {
		return nil, fmt.Errorf("%d games: too few", n)
	}
	px := 2
	if framing1 == 0 || framing1 == n {
		px = 1 // one framing only: no framing term
	}
	q := nh + nr
	s := &mixedStats{q: q, nh: nh, px: px, ZtZ: mat.NewSymDense(q, nil), ZtX: mat.NewDense(q, px, nil), XtX: mat.NewSymDense(px, nil),
		Zty: mat.NewVecDense(q, nil), Xty: mat.NewVecDense(px, nil)}
	for _, c := range cells {
		h, r := hIdx[c.Holder], nh+rIdx[c.Requester]
		for _, g := range c.Games {
			x := [2]float64{1, float64(g.Framing)}
			s.n++
			s.framing1 += x[1]
			s.ZtZ.SetSym(h, h, s.ZtZ.At(h, h)+1)
			s.ZtZ.SetSym(r, r, s.ZtZ.At(r, r)+1)
			s.ZtZ.SetSym(h, r, s.ZtZ.At(h, r)+1)
			for j := 0; j < px; j++ {
				s.ZtX.Set(h, j, s.ZtX.At(h, j)+x[j])
				s.ZtX.Set(r, j, s.ZtX.At(r, j)+x[j])
				s.Xty.SetVec(j, s.Xty.AtVec(j)+x[j]*g.Y)
				for k := j; k < px; k++ {
					s.XtX.SetSym(j, k, s.XtX.At(j, k)+x[j]*x[k])
				}
			}
			s.Zty.SetVec(h, s.Zty.AtVec(h)+g.Y)
			s.Zty.SetVec(r, s.Zty.AtVec(r)+g.Y)
			s.yty += g.Y * g.Y
		}
	}
	return s, nil
}

// evalResult is the profiled REML solution at one θ; varB1 is the
// framing coefficient's sampling variance (0 without the term).
type evalResult struct {
	dev, sigma2, b0, b1, varB1 float64
	ok                         bool
}

// eval computes the REML criterion at θ = (θh, θr).
func (s *mixedStats) eval(th, tr float64) evalResult {
	q, px := s.q, s.px
	lam := func(i int) float64 {
		if i < s.nh {
			return th
		}
		return tr
	}
	A := mat.NewSymDense(q, nil)
	for i := 0; i < q; i++ {
		for j := i; j < q; j++ {
			v := lam(i) * s.ZtZ.At(i, j) * lam(j)
			if i == j {
				v++
			}
			A.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(A) {
		return evalResult{}
	}
	var L mat.TriDense
	ch.LTo(&L)
	// Forward solves: L cu = Λ Z'y, L RZX = Λ Z'X.
	cu := mat.NewVecDense(q, nil)
	B := mat.NewDense(q, px, nil)
	for i := 0; i < q; i++ {
		cu.SetVec(i, lam(i)*s.Zty.AtVec(i))
		for j := 0; j < px; j++ {
			B.Set(i, j, lam(i)*s.ZtX.At(i, j))
		}
	}
	if err := cu.SolveVec(&L, cu); err != nil {
		return evalResult{}
	}
	var RZX mat.Dense
	if err := RZX.Solve(&L, B); err != nil {
		return evalResult{}
	}
	// Schur complement X'X − RZX'RZX = R_X'R_X.
	var G mat.Dense
	G.Mul(RZX.T(), &RZX)
	S := mat.NewSymDense(px, nil)
	for i := 0; i < px; i++ {
		for j := i; j < px; j++ {
			S.SetSym(i, j, s.XtX.At(i, j)-G.At(i, j))
		}
	}
	var cx mat.Cholesky
	if !cx.Factorize(S) {
		return evalResult{}
	}
	var rhs mat.VecDense
	rhs.MulVec(RZX.T(), cu)
	rhs.SubVec(s.Xty, &rhs)
	var beta mat.VecDense
	if err := cx.SolveVecTo(&beta, &rhs); err != nil {
		return evalResult{}
	}
	// r² = y'y − ||cu||² − ||z_x||², z_x = R_X'^{-1}(X'y − RZX'cu).
	var LX mat.TriDense
	cx.LTo(&LX)
	var zx mat.VecDense
	if err := zx.SolveVec(&LX, &rhs); err != nil {
		return evalResult{}
	}
	r2 := s.yty - mat.Dot(cu, cu) - mat.Dot(&zx, &zx)
	df := float64(s.n - px)
	if !(r2 > 0) {
		return evalResult{}
	}
	logdet := 0.0
	for i := 0; i < q; i++ {
		logdet += 2 * math.Log(L.At(i, i))
	}
	for i := 0; i < px; i++ {
		logdet += 2 * math.Log(LX.At(i, i))
	}
	dev := logdet + df*(1+math.Log(2*math.Pi*r2/df))
	res := evalResult{dev: dev, sigma2: r2 / df, b0: beta.AtVec(0), ok: true}
	if px == 2 {
		// Cov β̂ = σ² (X'V⁻¹X)⁻¹ = σ² S⁻¹, V in units of σ².
		var inv mat.SymDense
		if err := cx.InverseTo(&inv); err != nil {
			return evalResult{}
		}
		res.b1, res.varB1 = beta.AtVec(1), res.sigma2*inv.At(1, 1)
	}
	return res
}

func fitMixed(cells []Cell) (Mixed, error) {
	var f Mixed
	s, err := newMixedStats(cells)
	if err != nil {
		return f, err
	}
	obj := func(x []float64) float64 {
		f.Evaluations++
		r := s.eval(math.Abs(x[0]), math.Abs(x[1]))
		if !r.ok {
			return math.Inf(1)
		}
		return r.dev
	}
	best := math.Inf(1)
	var bestX []float64
	converged := false
	for _, start := range [][]float64{{1, 1}, {2, 0.3}, {0.3, 2}} {
		x, fx, ok := nelderMead(obj, start, 1e-10, 4000)
		if fx < best {
			best, bestX, converged = fx, x, ok
		}
	}
	if bestX == nil || math.IsInf(best, 0) {
		return f, ErrNotConverged
	}
	th, tr := math.Abs(bestX[0]), math.Abs(bestX[1])
	r := s.eval(th, tr)
	f.Holder, f.Requester, f.Residual = th*th*r.sigma2, tr*tr*r.sigma2, r.sigma2
	f.Intercept, f.FramingCoef, f.FramingCoefVar, f.Deviance = r.b0, r.b1, r.varB1, r.dev
	f.NoFraming = s.px == 1
	if !f.NoFraming {
		p := s.framing1 / float64(s.n)
		f.Framing = p * (1 - p) * (r.b1*r.b1 - r.varB1)
	}
	f.Converged = converged
	f.Singular = th < 1e-4 || tr < 1e-4
	if !converged {
		return f, ErrNotConverged
	}
	return f, nil
}

// nelderMead minimises fn from x0 with the Nelder–Mead simplex (standard
// coefficients: reflection 1, expansion 2, contraction ½, shrink ½). It
// stops when the simplex's function values and extent are within tol, and
// reports whether it did before maxEval evaluations.
func nelderMead(fn func([]float64) float64, x0 []float64, tol float64, maxEval int) ([]float64, float64, bool) {
	n := len(x0)
	pts := make([][]float64, n+1)
	fv := make([]float64, n+1)
	for i := range pts {
		pts[i] = append([]float64(nil), x0...)
		if i > 0 {
			step := 0.25 * math.Max(math.Abs(x0[i-1]), 0.1)
			pts[i][i-1] += step
		}
		fv[i] = fn(pts[i])
	}
	evals := n + 1
	point := func(c []float64, t float64, w []float64) []float64 {
		out := make([]float64, n)
		for j := range out {
			out[j] = c[j] + t*(w[j]-c[j])
		}
		return out
	}
	for evals < maxEval {
		// Order: best first.
		for i := 1; i <= n; i++ {
			for j := i; j > 0 && fv[j] < fv[j-1]; j-- {
				fv[j], fv[j-1] = fv[j-1], fv[j]
				pts[j], pts[j-1] = pts[j-1], pts[j]
			}
		}
		spread := 0.0
		for i := 1; i <= n; i++ {
			for j := 0; j < n; j++ {
				spread = math.Max(spread, math.Abs(pts[i][j]-pts[0][j]))
			}
		}
		if math.Abs(fv[n]-fv[0]) <= tol*(1+math.Abs(fv[0])) && spread <= math.Sqrt(tol) {
			return pts[0], fv[0], true
		}
		c := make([]float64, n)
		for i := 0; i < n; i++ {
			for j := range c {
				c[j] += pts[i][j] / float64(n)
			}
		}
		xr := point(c, -1, pts[n])
		fr := fn(xr)
		evals++
		switch {
		case fr < fv[0]:
			xe := point(c, -2, pts[n])
			fe := fn(xe)
			evals++
			if fe < fr {
				pts[n], fv[n] = xe, fe
			} else {
				pts[n], fv[n] = xr, fr
			}
		case fr < fv[n-1]:
			pts[n], fv[n] = xr, fr
		default:
			xc := point(c, 0.5, pts[n])
			if fr < fv[n] {
				xc = point(c, -0.5, pts[n])
			}
			fc := fn(xc)
			evals++
			if fc < math.Min(fr, fv[n]) {
				pts[n], fv[n] = xc, fc
				continue
			}
			for i := 1; i <= n; i++ {
				pts[i] = point(pts[0], 0.5, pts[i])
				fv[i] = fn(pts[i])
				evals++
			}
		}
	}
	return pts[0], fv[0], false
}
