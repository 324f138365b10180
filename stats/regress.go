package stats

import (
	"fmt"
	"math"
)

// Block is a named group of predictor columns entered into a regression
// together (an agent's identity as one dummy column per agent, a set of
// message features).
type Block struct {
	Name string
	// Columns are the predictors, each as long as the outcome.
	Columns [][]float64
}

// R2Step is the fit after one block was entered.
type R2Step struct {
	// Name is the block's.
	Name string
	// R2 is the coefficient of determination of the least-squares fit of
	// the outcome on an intercept and every column entered so far; Delta
	// is what this block added.
	R2, Delta float64
	// Params is the number of columns this block added to the fit: its
	// columns less those that are constant or a linear combination of the
	// columns before them (of n dummies for n agents, n − 1; of a
	// constant column, 0).
	Params int
}

// SequentialR2 enters blocks into an ordinary least-squares regression of
// y with an intercept, in order, and returns R² after each: the
// hierarchical regression of seed 001's table 8. The columns are centred
// and orthogonalised in order (modified Gram–Schmidt, twice, which keeps
// the basis orthogonal to rounding); a column left with less than 1e-9 of
// its centred norm is dependent on the ones before it and is dropped, so
// full sets of dummies need no reference level. R² after a block is the
// squared norm of y's projection onto the basis so far over y's centred
// sum of squares.
//
// y must hold two values or more, all finite and not all equal, and every
// column as many finite values.
func SequentialR2(y []float64, blocks []Block) ([]R2Step, error) {
	n := len(y)
	if n < 2 {
		return nil, fmt.Errorf("stats.SequentialR2: %d values: %w", n, ErrEmpty)
	}
	yc, err := centred(y)
	if err != nil {
		return nil, fmt.Errorf("stats.SequentialR2: the outcome: %w", err)
	}
	tss := dotF(yc, yc)
	// A constant outcome leaves rounding residues (its mean is not its
	// value): a spread under 1e-12 of the values' size is none.
	if tss <= float64(n)*math.Pow(1e-12*maxAbs(y), 2) {
		return nil, fmt.Errorf("stats.SequentialR2: the outcome: %w", ErrConstant)
	}
	var basis [][]float64
	out := make([]R2Step, 0, len(blocks))
	explained := 0.0
	for _, b := range blocks {
		step := R2Step{Name: b.Name}
		for j, col := range b.Columns {
			if len(col) != n {
				return nil, fmt.Errorf("stats.SequentialR2: block %s, column %d: %d values for %d outcomes: %w", b.Name, j, len(col), n, ErrLength)
			}
			v, err := centred(col)
			if err != nil {
				return nil, fmt.Errorf("stats.SequentialR2: block %s, column %d: %w", b.Name, j, err)
			}
			norm0 := math.Sqrt(dotF(v, v))
			if norm0 <= 1e-12*math.Sqrt(float64(n))*maxAbs(col) {
				continue // constant (to rounding): the intercept has it
			}
			for pass := 0; pass < 2; pass++ {
				for _, q := range basis {
					c := dotF(q, v)
					for i := range v {
						v[i] -= c * q[i]
					}
				}
			}
			norm := math.Sqrt(dotF(v, v))
			if norm <= 1e-9*norm0 {
				continue // dependent on the columns before it
			}
			for i := range v {
				v[i] /= norm
			}
			basis = append(basis, v)
			c := dotF(v, yc)
			explained += c * c
			step.Params++
		}
		step.R2 = math.Min(1, explained/tss)
		prev := 0.0
		if len(out) > 0 {
			prev = out[len(out)-1].R2
		}
		step.Delta = step.R2 - prev
		out = append(out, step)
	}
	return out, nil
}

// centred returns xs less their mean.
func centred(xs []float64) ([]float64, error) {
	m := 0.0
	for _, x := range xs {
		if !finite(x) {
			return nil, ErrNonFinite
		}
		m += x
	}
	m /= float64(len(xs))
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x - m
	}
	return out, nil
}

func maxAbs(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

func dotF(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
