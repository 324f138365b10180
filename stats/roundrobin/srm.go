// Package roundrobin holds the variance statistics of a round-robin
// tournament in which every game pits a holder against a requester (seed
// 001's endowment game): the social-relations-model method-of-moments
// budget (holder, requester, requester × holder matchup, framing,
// residual), the crossed-random-intercepts fit by REML, and the bootstrap
// that resamples ordered pairings.
//
// The model of a game's outcome y, when agent h holds and agent r asks
// under framing f:
//
//	y = μ + a_h + b_r + g_hr + φ_f + e
//
// a (holder), b (requester) and g (the matchup of the ordered pairing,
// with Cov(g_hr, g_rh) the reciprocity) are random effects; φ is the fixed
// framing effect (two levels); e is game noise.
package roundrobin

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Game is one game of a cell: its framing (0 or 1) and outcome.
type Game struct {
	Framing int
	Y       float64
}

// Cell is the games of one ordered pairing: Holder held, Requester asked.
// Agents are numbered from 0.
type Cell struct {
	Holder, Requester int
	Games             []Game
}

// Cells groups observations into ordered-pairing cells, sorted by
// (holder, requester).
func Cells(holder, requester, framing []int, y []float64) ([]Cell, error) {
	if len(holder) != len(y) || len(requester) != len(y) || len(framing) != len(y) {
		return nil, errors.New("roundrobin.Cells: inputs differ in length")
	}
	idx := map[[2]int]int{}
	var cells []Cell
	for i := range y {
		if holder[i] == requester[i] {
			return nil, fmt.Errorf("roundrobin.Cells: game %d: agent %d plays itself", i, holder[i])
		}
		if framing[i] != 0 && framing[i] != 1 {
			return nil, fmt.Errorf("roundrobin.Cells: game %d: framing %d is not 0 or 1", i, framing[i])
		}
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return nil, fmt.Errorf("roundrobin.Cells: game %d: outcome %v", i, y[i])
		}
		k := [2]int{holder[i], requester[i]}
		j, ok := idx[k]
		if !ok {
			j = len(cells)
			idx[k] = j
			cells = append(cells, Cell{Holder: k[0], Requester: k[1]})
		}
		cells[j].Games = append(cells[j].Games, Game{Framing: framing[i], Y: y[i]})
	}
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].Holder != cells[j].Holder {
			return cells[i].Holder < cells[j].Holder
		}
		return cells[i].Requester < cells[j].Requester
	})
	return cells, nil
}

// Budget is a variance decomposition of the outcome.
type Budget struct {
	// Holder, Requester, Matchup, Framing and Residual are the variance
	// components as estimated: a method-of-moments estimate may be
	// negative (a component near zero); shares use max(0, ·).
	Holder, Requester, Matchup, Framing, Residual float64
	// Reciprocity is Cov(g_hr, g_rh), the covariance of a pairing's
	// matchup effect with the reverse pairing's (not a budget component).
	Reciprocity float64
	// FramingEffect is the mean outcome under framing 0 minus framing 1,
	// within pairings.
	FramingEffect float64
	// Mean is the mean of the cell means.
	Mean float64
	// Games, Cells, Holders and Requesters count what was used.
	Games, Cells, Holders, Requesters int
	// NoFraming reports that the framing effect was not estimated: one
	// framing only, or (MoM, which estimates it within pairings) no
	// ordered pairing played under both. Framing and FramingEffect are 0,
	// and whatever framing does is left in the other components.
	NoFraming bool
	// Pooled reports that no ordered pairing was played twice (MoM, seed
	// 001's schedule at rounds: 1), so the matchup cannot be told from game
	// noise: Residual holds both and Matchup is 0, as in specification (A).
	Pooled bool
}

// Errors of designs that hold no budget, wrapped by MoM and FitMixed;
// their messages say why in words.
var (
	// ErrNoVariance: every game has the same outcome.
	ErrNoVariance = errors.New("there is no variance to decompose")
	// ErrConfounded: every holder meets one requester only and every
	// requester one holder (two agents, or a subset like it), so holder
	// and requester identity cannot be told apart.
	ErrConfounded = errors.New("holder and requester identity cannot be told apart")
)

// checkDesign returns ErrNoVariance or ErrConfounded (wrapped with the
// case) when the cells hold no budget.
func checkDesign(cells []Cell) error {
	first, constant, seen := 0.0, true, false
	reqOf, holdOf := map[int]map[int]bool{}, map[int]map[int]bool{}
	for _, c := range cells {
		for _, g := range c.Games {
			if !seen {
				first, seen = g.Y, true
			} else if g.Y != first {
				constant = false
			}
		}
		if reqOf[c.Holder] == nil {
			reqOf[c.Holder] = map[int]bool{}
		}
		if holdOf[c.Requester] == nil {
			holdOf[c.Requester] = map[int]bool{}
		}
		reqOf[c.Holder][c.Requester], holdOf[c.Requester][c.Holder] = true, true
	}
	if seen && constant {
		return fmt.Errorf("every game's outcome is %g: %w", first, ErrNoVariance)
	}
	one := func(m map[int]map[int]bool) bool {
		for _, v := range m {
			if len(v) != 1 {
				return false
			}
		}
		return true
	}
	if len(reqOf) >= 2 && one(reqOf) && one(holdOf) {
		return fmt.Errorf("each of the %d holders meets only one requester and each requester one holder: %w", len(reqOf), ErrConfounded)
	}
	return nil
}

// Component names, in the budget's order.
const (
	CompHolder    = "holder"
	CompRequester = "requester"
	CompMatchup   = "matchup"
	CompFraming   = "framing"
	CompResidual  = "residual"
)

// Components lists the budget's components in order.
var Components = []string{CompHolder, CompRequester, CompMatchup, CompFraming, CompResidual}

// Value returns a component by name.
func (b Budget) Value(name string) float64 {
	switch name {
	case CompHolder:
		return b.Holder
	case CompRequester:
		return b.Requester
	case CompMatchup:
		return b.Matchup
	case CompFraming:
		return b.Framing
	case CompResidual:
		return b.Residual
	}
	return math.NaN()
}

// Total is the sum of the components, each truncated at 0.
func (b Budget) Total() float64 {
	t := 0.0
	for _, c := range Components {
		t += math.Max(0, b.Value(c))
	}
	return t
}

// Share is a component's share of the total (0 to 1), truncated at 0.
func (b Budget) Share(name string) float64 {
	t := b.Total()
	if t <= 0 {
		return math.NaN()
	}
	return math.Max(0, b.Value(name)) / t
}

// Ratio is the holder-to-requester ratio of the (truncated) components;
// +Inf when the requester component is 0.
func (b Budget) Ratio() float64 {
	h, r := math.Max(0, b.Holder), math.Max(0, b.Requester)
	if r == 0 {
		if h == 0 {
			return math.NaN()
		}
		return math.Inf(1)
	}
	return h / r
}

// MoM estimates the budget by the social relations model's method of
// moments, generalised to any design: cells may be missing (a subset of
// the cohort) or repeated (a bootstrap resample, which draws a pairing
// more than once). Cells of the same ordered pairing are copies of it:
// they share its matchup effect and its games, and the moment equations
// count them so (as independent pairings, each copy's matchup would be
// counted as new, and the resamples would move matchup variance into
// the holder and requester components).
//
// The framing effect is estimated within cells (each cell's framing-0 mean
// minus its framing-1 mean, weighted by n0·n1/(n0+n1)) and removed; game
// noise is the pooled within-cell variance; the cell means are then fitted
// by least squares with holder and requester effects (centred), and four
// quadratic forms — the sums of squares of the fitted holder and requester
// effects, of the residuals, and the cross-products of the residuals of
// reverse pairings — are equated with their exact expectations under the
// model (tr(A·V)), which are linear in the holder, requester, matchup and
// reciprocity (co)variances given the game noise. On a complete, balanced
// round robin this is Warner, Kenny and Stoto's (1979) estimator, with the
// matchup variance net of game noise. The framing component is the
// variance the framing term adds over the games, estimated without bias:
// p(1−p)·(d̂² − Var d̂), p the share of framing-1 games, Var d̂ the game
// noise over Σ n0·n1/(n0+n1) (FitMixed's is the same with its β̂ and its
// variance). Without any pairing played under both framings the framing
// is not estimated (NoFraming). Without any pairing played twice the
// matchup and game noise are one component, the residual (Pooled): the
// cell means' residual variance is then fitted as one unknown.
//
// A design whose outcomes are all equal, or in which holder and
// requester cannot be told apart, is an error (ErrNoVariance,
// ErrConfounded).
func MoM(cells []Cell) (Budget, error) {
	b, err := mom(cells)
	if err != nil {
		return b, fmt.Errorf("roundrobin.MoM: %w", err)
	}
	return b, nil
}

func mom(cells []Cell) (Budget, error) {
	var b Budget
	m := len(cells)
	if m == 0 {
		return b, errors.New("no cells")
	}
	if err := checkDesign(cells); err != nil {
		return b, err
	}
	// Framing, within cells.
	var sw, swd float64
	framing1 := 0
	for _, c := range cells {
		n0, n1, s0, s1 := 0, 0, 0.0, 0.0
		for _, g := range c.Games {
			if g.Framing == 0 {
				n0, s0 = n0+1, s0+g.Y
			} else {
				n1, s1 = n1+1, s1+g.Y
			}
		}
		if n0 > 0 && n1 > 0 {
			w := float64(n0*n1) / float64(n0+n1)
			sw += w
			swd += w * (s0/float64(n0) - s1/float64(n1))
		}
		b.Games += len(c.Games)
		framing1 += n1
	}
	d := 0.0
	if sw > 0 {
		d = swd / sw
	}
	b.FramingEffect = d
	b.NoFraming = sw == 0
	// Cell means and game noise, the framing effect removed.
	x := make([]float64, m)
	nc := make([]float64, m)
	var ssw float64
	dfw := 0
	for i, c := range cells {
		if len(c.Games) == 0 {
			return b, fmt.Errorf("cell %d (holder %d, requester %d) has no games", i, c.Holder, c.Requester)
		}
		sum := 0.0
		for _, g := range c.Games {
			sum += adjusted(g, d)
		}
		mean := sum / float64(len(c.Games))
		for _, g := range c.Games {
			dv := adjusted(g, d) - mean
			ssw += dv * dv
		}
		x[i], nc[i] = mean, float64(len(c.Games))
		dfw += len(c.Games) - 1
	}
	if sw > 0 {
		dfw--
	}
	b.Pooled = dfw <= 0
	if !b.Pooled {
		b.Residual = ssw / float64(dfw)
	}
	if sw > 0 && !b.Pooled {
		p := float64(framing1) / float64(b.Games)
		b.Framing = p * (1 - p) * (d*d - b.Residual/sw)
	}
	b.NoFraming = b.NoFraming || b.Pooled // Var d̂ needs the game noise alone
	b.Cells = m
	for _, v := range x {
		b.Mean += v / float64(m)
	}
	return b, b.fitCells(cells, x, nc)
}

func adjusted(g Game, d float64) float64 {
	if g.Framing == 0 {
		return g.Y - d/2
	}
	return g.Y + d/2
}

// fitCells estimates the holder, requester, matchup and reciprocity
// components from the cell means x (n games each), given b.Residual; with
// b.Pooled, the residual (matchup and game noise together) is the third
// unknown.
func (b *Budget) fitCells(cells []Cell, x, nc []float64) error {
	m := len(cells)
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
	b.Holders, b.Requesters = nh, nr
	if nh < 2 || nr < 2 {
		return fmt.Errorf("%d holders and %d requesters: need at least 2 of each", nh, nr)
	}
	p := 1 + nh + nr
	X := mat.NewDense(m, p, nil)
	hOf, rOf := make([]int, m), make([]int, m)
	for i, c := range cells {
		hOf[i], rOf[i] = hIdx[c.Holder], rIdx[c.Requester]
		X.Set(i, 0, 1)
		X.Set(i, 1+hOf[i], 1)
		X.Set(i, 1+nh+rOf[i], 1)
	}
	var svd mat.SVD
	if !svd.Factorize(X, mat.SVDThin) {
		return errors.New("the design's SVD failed")
	}
	sv := svd.Values(nil)
	var U, V mat.Dense
	svd.UTo(&U)
	svd.VTo(&V)
	tol := sv[0] * 1e-10 * float64(max(m, p))
	k := 0
	for _, s := range sv {
		if s > tol {
			k++
		}
	}
	if m-k < 2 {
		return fmt.Errorf("%d ordered pairings for %d holder and requester effects: too few left over to estimate the matchup", m, k)
	}
	Uk := U.Slice(0, m, 0, k).(*mat.Dense)
	// β = V S⁻¹ U'x; â, b̂ are its centred holder and requester parts:
	// â = Ma (U'x), Ma = C · V_h · S⁻¹.
	effect := func(off, n int) *mat.Dense {
		M := mat.NewDense(n, k, nil)
		for j := 0; j < k; j++ {
			mean := 0.0
			for i := 0; i < n; i++ {
				mean += V.At(off+i, j) / float64(n)
			}
			for i := 0; i < n; i++ {
				M.Set(i, j, (V.At(off+i, j)-mean)/sv[j])
			}
		}
		return M
	}
	Ma, Mb := effect(1, nh), effect(1+nh, nr)
	var Na, Nb mat.Dense
	Na.Mul(Ma.T(), Ma)
	Nb.Mul(Mb.T(), Mb)
	xv := mat.NewVecDense(m, x)
	var ux mat.VecDense
	ux.MulVec(Uk.T(), xv)
	var ah, bh mat.VecDense
	ah.MulVec(Ma, &ux)
	bh.MulVec(Mb, &ux)
	var fit, r mat.VecDense
	fit.MulVec(Uk, &ux)
	r.SubVec(xv, &fit)
	// Pairings: cells of the same ordered pairing are copies of it (a
	// bootstrap resample draws a pairing more than once), sharing its
	// matchup effect and its games; pOf numbers the distinct pairings.
	// Reverse pairings: instance pairs (i,j), (j,i).
	byPair := map[[2]int][]int{}
	pOf := make([]int, m)
	pIdx := map[[2]int]int{}
	for i, c := range cells {
		key := [2]int{c.Holder, c.Requester}
		byPair[key] = append(byPair[key], i)
		if _, ok := pIdx[key]; !ok {
			pIdx[key] = len(pIdx)
		}
		pOf[i] = pIdx[key]
	}
	var rev [][2]int // ordered: each unordered instance pair twice
	for i, c := range cells {
		for _, j := range byPair[[2]int{c.Requester, c.Holder}] {
			rev = append(rev, [2]int{i, j})
		}
	}
	Q := []float64{mat.Dot(&ah, &ah), mat.Dot(&bh, &bh), mat.Dot(&r, &r), 0}
	for _, e := range rev {
		Q[3] += r.AtVec(e[0]) * r.AtVec(e[1])
	}

	// The components' covariance structures over cells, as K·U (m×k),
	// trace, and entries on reverse pairs.
	type comp struct {
		KU    *mat.Dense
		trace float64
		onRev func(i, j int) float64
	}
	groupKU := func(of []int, n int) *mat.Dense {
		S := mat.NewDense(n, k, nil)
		for i := 0; i < m; i++ {
			row, u := S.RawRowView(of[i]), Uk.RawRowView(i)
			for j := range row {
				row[j] += u[j]
			}
		}
		KU := mat.NewDense(m, k, nil)
		for i := 0; i < m; i++ {
			KU.SetRow(i, S.RawRowView(of[i]))
		}
		return KU
	}
	zero := func(int, int) float64 { return 0 }
	// The matchup is the pairing's, shared by its copies; so is the game
	// noise of the cell mean (the same games), 1/n of a game's.
	kuG := groupKU(pOf, len(pIdx))
	kuD := mat.NewDense(m, k, nil)
	for _, e := range rev {
		row, u := kuD.RawRowView(e[0]), Uk.RawRowView(e[1])
		for j := range row {
			row[j] += u[j]
		}
	}
	kuE := mat.NewDense(m, k, nil)
	trE := 0.0
	for i := 0; i < m; i++ {
		row, u := kuE.RawRowView(i), kuG.RawRowView(i)
		for j := range row {
			row[j] = u[j] / nc[i]
		}
		trE += 1 / nc[i]
	}
	comps := []comp{
		{groupKU(hOf, nh), float64(m), func(i, j int) float64 { return b2f(hOf[i] == hOf[j]) }},
		{groupKU(rOf, nr), float64(m), func(i, j int) float64 { return b2f(rOf[i] == rOf[j]) }},
		{kuG, float64(m), zero},
		{kuD, 0, func(int, int) float64 { return 1 }},
		{kuE, trE, zero},
	}
	// Coefficients: coef[q][c] = E[Q_q] per unit of component c.
	coef := make([][]float64, 4)
	for q := range coef {
		coef[q] = make([]float64, len(comps))
	}
	for c, cp := range comps {
		var G mat.Dense
		G.Mul(Uk.T(), cp.KU) // U'KU
		coef[0][c] = frob(&Na, &G)
		coef[1][c] = frob(&Nb, &G)
		coef[2][c] = cp.trace - mat.Trace(&G)
		// (RKR)[i,j] = K[i,j] − U_i·(KU)_j − (KU)_i·U_j + (UG)_i·U_j.
		var UG mat.Dense
		UG.Mul(Uk, &G)
		for _, e := range rev {
			i, j := e[0], e[1]
			ui, uj := Uk.RawRowView(i), Uk.RawRowView(j)
			coef[3][c] += cp.onRev(i, j) - dot(ui, cp.KU.RawRowView(j)) - dot(cp.KU.RawRowView(i), uj) + dot(UG.RawRowView(i), uj)
		}
	}
	// Solve for (holder, requester, matchup[, reciprocity]) given the
	// noise; pooled, the third unknown is matchup + noise/n, whose
	// structure over cells is the game noise's (each cell's own).
	unknowns := 4
	if len(rev) == 0 {
		unknowns = 3 // no reverse pairings: the reciprocity is not estimable
	}
	A := mat.NewDense(unknowns, unknowns, nil)
	rhs := mat.NewVecDense(unknowns, nil)
	for q := 0; q < unknowns; q++ {
		for c := 0; c < unknowns; c++ {
			A.Set(q, c, coef[q][c])
		}
		if b.Pooled {
			A.Set(q, 2, coef[q][4])
			rhs.SetVec(q, Q[q])
		} else {
			rhs.SetVec(q, Q[q]-coef[q][4]*b.Residual)
		}
	}
	var sol mat.VecDense
	if err := sol.SolveVec(A, rhs); err != nil {
		return fmt.Errorf("the moment equations are singular: %w", err)
	}
	b.Holder, b.Requester, b.Matchup = sol.AtVec(0), sol.AtVec(1), sol.AtVec(2)
	if b.Pooled {
		b.Matchup, b.Residual = 0, sol.AtVec(2)
	}
	if unknowns == 4 {
		b.Reciprocity = sol.AtVec(3)
	}
	return nil
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// frob is Σ A∘B (A symmetric k×k).
func frob(A, B *mat.Dense) float64 {
	r, c := A.Dims()
	s := 0.0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s += A.At(i, j) * B.At(i, j)
		}
	}
	return s
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}
