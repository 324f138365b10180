// Package stats holds the small statistics of parley's evaluations: mean ± SD
// over runs, pairwise win rates, judge agreement (exact, within ±1, Pearson,
// quadratic-weighted Cohen's kappa, confusion matrices), running averages
// for chart series, Student t confidence intervals of means and paired
// differences, and those of tournaments: Spearman's rank correlation,
// Elo ratings per role with an order-independent average, Glicko-2
// ratings with deviations (the league's), Cohen's d with
// its exact intervals and TOST equivalence tests (with the Student and
// noncentral t distributions they need), and the sequential R² of a
// hierarchical regression. It has no dependencies beyond the
// standard library; the round-robin variance statistics are in
// stats/roundrobin.
//
// Conventions: rates and agreements are percentages (0–100), as in the
// paper's tables; standard deviations are sample standard deviations (ddof 1).
package stats

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by the functions of this package; test with errors.Is.
var (
	// ErrEmpty: the input has no values.
	ErrEmpty = errors.New("empty input")
	// ErrLength: two paired inputs differ in length.
	ErrLength = errors.New("inputs differ in length")
	// ErrNonFinite: an input holds NaN or ±Inf.
	ErrNonFinite = errors.New("non-finite value")
	// ErrConstant: an input is constant, so a correlation is undefined.
	ErrConstant = errors.New("constant input")
	// ErrRange: a rating lies outside 1..K (or K < 1), or an outcome is unknown.
	ErrRange = errors.New("value out of range")
	// ErrUndefined: a statistic is 0/0 (kappa when chance disagreement is 0).
	ErrUndefined = errors.New("statistic undefined")
)

// MeanSD returns the arithmetic mean of xs and its sample standard deviation
// (ddof 1: the sum of squared deviations divided by n−1), the convention of
// "mean ± SD over three runs". For n = 1 the SD is 0; for n = 0 both are NaN.
// NaN inputs propagate.
func MeanSD(xs []float64) (mean, sd float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean = sum / float64(n)
	if n == 1 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(n-1))
}

// Summary is a mean ± SD over N values, as MeanSD computes it.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// Summarize returns the Summary of xs (see MeanSD for the conventions).
func Summarize(xs []float64) Summary {
	m, s := MeanSD(xs)
	return Summary{N: len(xs), Mean: m, SD: s}
}

// String formats s as "mean ± sd" with one decimal, or "–" when N is 0.
func (s Summary) String() string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ± %.1f", s.Mean, s.SD)
}

// Outcome is the result of one pairwise comparison from the left model's
// side. The zero value is not a valid outcome.
type Outcome int

// Pairwise outcomes of the left model.
const (
	Win  Outcome = 1
	Tie  Outcome = 2
	Loss Outcome = 3
)

// String returns "win", "tie", "loss" or "Outcome(n)".
func (o Outcome) String() string {
	switch o {
	case Win:
		return "win"
	case Tie:
		return "tie"
	case Loss:
		return "loss"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ParseOutcome parses "win", "tie" or "loss" (as String writes them).
func ParseOutcome(s string) (Outcome, error) {
	switch s {
	case "win":
		return Win, nil
	case "tie":
		return Tie, nil
	case "loss":
		return Loss, nil
	}
	return 0, fmt.Errorf("stats.ParseOutcome(%q): %w", s, ErrRange)
}

// WinRateResult counts a set of pairwise outcomes. Percent is the left
// model's win rate in percent, where a win counts 1, a tie 0.5 and a loss 0:
// 100 × (wins + ties/2) / (wins + ties + losses).
type WinRateResult struct {
	Wins    int     `json:"wins"`
	Ties    int     `json:"ties"`
	Losses  int     `json:"losses"`
	Percent float64 `json:"win_rate"`
}

// N is the number of outcomes counted.
func (r WinRateResult) N() int { return r.Wins + r.Ties + r.Losses }

// WinRate counts outcomes and returns the left model's win rate (a tie counts
// half a win). It fails on an empty input or an unknown outcome.
func WinRate(outcomes []Outcome) (WinRateResult, error) {
	var r WinRateResult
	if len(outcomes) == 0 {
		return r, fmt.Errorf("stats.WinRate: %w", ErrEmpty)
	}
	for i, o := range outcomes {
		switch o {
		case Win:
			r.Wins++
		case Tie:
			r.Ties++
		case Loss:
			r.Losses++
		default:
			return WinRateResult{}, fmt.Errorf("stats.WinRate: outcome %d is %v: %w", i, o, ErrRange)
		}
	}
	r.Percent = 100 * (float64(r.Wins) + 0.5*float64(r.Ties)) / float64(r.N())
	return r, nil
}

// Pearson returns the Pearson correlation coefficient of x and y. It fails
// (rather than return NaN) when the inputs differ in length, have fewer than
// two values, hold NaN or ±Inf (ErrNonFinite), or when either is constant
// (ErrConstant: the coefficient is 0/0).
func Pearson(x, y []float64) (float64, error) {
	if len(x) != len(y) {
		return 0, fmt.Errorf("stats.Pearson: %d and %d values: %w", len(x), len(y), ErrLength)
	}
	if len(x) < 2 {
		return 0, fmt.Errorf("stats.Pearson: %d values, need 2: %w", len(x), ErrEmpty)
	}
	for i := range x {
		if !finite(x[i]) || !finite(y[i]) {
			return 0, fmt.Errorf("stats.Pearson: pair %d (%v, %v): %w", i, x[i], y[i], ErrNonFinite)
		}
	}
	mx, _ := MeanSD(x)
	my, _ := MeanSD(y)
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, fmt.Errorf("stats.Pearson: %w", ErrConstant)
	}
	r := sxy / math.Sqrt(sxx*syy)
	// Rounding can push |r| a hair past 1.
	return math.Max(-1, math.Min(1, r)), nil
}

// PearsonInts is Pearson over integer ratings.
func PearsonInts(a, b []int) (float64, error) {
	return Pearson(toFloats(a), toFloats(b))
}

// ExactAgreement returns the percentage of pairs where a[i] == b[i].
func ExactAgreement(a, b []int) (float64, error) {
	p, err := AgreementWithin(a, b, 0)
	if err != nil {
		return 0, fmt.Errorf("stats.ExactAgreement: %w", err)
	}
	return p, nil
}

// WithinOneAgreement returns the percentage of pairs where |a[i] − b[i]| ≤ 1
// (the paper's "±1 agreement").
func WithinOneAgreement(a, b []int) (float64, error) {
	p, err := AgreementWithin(a, b, 1)
	if err != nil {
		return 0, fmt.Errorf("stats.WithinOneAgreement: %w", err)
	}
	return p, nil
}

// AgreementWithin returns the percentage of pairs where |a[i] − b[i]| ≤ tol.
func AgreementWithin(a, b []int, tol int) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("stats.AgreementWithin: %d and %d ratings: %w", len(a), len(b), ErrLength)
	}
	if len(a) == 0 {
		return 0, fmt.Errorf("stats.AgreementWithin: %w", ErrEmpty)
	}
	n := 0
	for i := range a {
		d := a[i] - b[i]
		if d < 0 {
			d = -d
		}
		if d <= tol {
			n++
		}
	}
	return 100 * float64(n) / float64(len(a)), nil
}

// ConfusionMatrix counts paired ratings in 1..k: m[i][j] is the number of
// pairs with a == i+1 and b == j+1 (rows: a, columns: b).
func ConfusionMatrix(a, b []int, k int) ([][]int, error) {
	if k < 1 {
		return nil, fmt.Errorf("stats.ConfusionMatrix: K = %d: %w", k, ErrRange)
	}
	if len(a) != len(b) {
		return nil, fmt.Errorf("stats.ConfusionMatrix: %d and %d ratings: %w", len(a), len(b), ErrLength)
	}
	m := make([][]int, k)
	for i := range m {
		m[i] = make([]int, k)
	}
	for i := range a {
		if a[i] < 1 || a[i] > k || b[i] < 1 || b[i] > k {
			return nil, fmt.Errorf("stats.ConfusionMatrix: pair %d (%d, %d) not in 1..%d: %w", i, a[i], b[i], k, ErrRange)
		}
		m[a[i]-1][b[i]-1]++
	}
	return m, nil
}

// QuadraticKappa returns Cohen's kappa with quadratic weights for two raters'
// integer ratings in 1..k:
//
//	κ = 1 − Σ w_ij·O_ij / Σ w_ij·E_ij,  w_ij = (i − j)² / (k − 1)²,
//
// where O is the confusion matrix and E_ij = rowsum_i · colsum_j / N the
// counts expected by chance (the same value as scikit-learn's
// cohen_kappa_score(weights="quadratic", labels=1..k)). It fails with
// ErrUndefined when Σ w·E is 0 (both raters gave one and the same rating
// throughout, or k = 1), where scikit-learn returns NaN.
func QuadraticKappa(a, b []int, k int) (float64, error) {
	m, err := ConfusionMatrix(a, b, k)
	if err != nil {
		return 0, fmt.Errorf("stats.QuadraticKappa: %w", err)
	}
	if len(a) == 0 {
		return 0, fmt.Errorf("stats.QuadraticKappa: %w", ErrEmpty)
	}
	rows := make([]float64, k)
	cols := make([]float64, k)
	for i := range k {
		for j := range k {
			rows[i] += float64(m[i][j])
			cols[j] += float64(m[i][j])
		}
	}
	n := float64(len(a))
	var obs, exp float64
	for i := range k {
		for j := range k {
			w := float64((i - j) * (i - j)) // the 1/(k−1)² factor cancels
			obs += w * float64(m[i][j])
			exp += w * rows[i] * cols[j] / n
		}
	}
	if exp == 0 {
		return 0, fmt.Errorf("stats.QuadraticKappa: chance disagreement is 0: %w", ErrUndefined)
	}
	return 1 - obs/exp, nil
}

// Agreement is the set of judge-agreement statistics of the paper's table 7
// for two raters over the same items. Pearson and Kappa are nil where they
// are undefined (a constant rater), since JSON cannot carry NaN.
type Agreement struct {
	N         int      `json:"n"`
	Exact     float64  `json:"exact"`      // % of identical ratings
	WithinOne float64  `json:"within_one"` // % of ratings at most 1 apart
	Pearson   *float64 `json:"pearson"`
	Kappa     *float64 `json:"kappa"` // quadratic-weighted Cohen's kappa
}

// Agree computes Agreement for ratings a and b in 1..k. It fails on inputs of
// different lengths, empty inputs and ratings outside 1..k; an undefined
// Pearson or kappa is left nil.
func Agree(a, b []int, k int) (Agreement, error) {
	if _, err := ConfusionMatrix(a, b, k); err != nil {
		return Agreement{}, fmt.Errorf("stats.Agree: %w", err)
	}
	exact, err := ExactAgreement(a, b)
	if err != nil {
		return Agreement{}, fmt.Errorf("stats.Agree: %w", err)
	}
	within, err := WithinOneAgreement(a, b)
	if err != nil {
		return Agreement{}, fmt.Errorf("stats.Agree: %w", err)
	}
	ag := Agreement{N: len(a), Exact: exact, WithinOne: within}
	if r, err := PearsonInts(a, b); err == nil {
		ag.Pearson = &r
	}
	if kappa, err := QuadraticKappa(a, b, k); err == nil {
		ag.Kappa = &kappa
	}
	return ag, nil
}

// RunningAverage returns the trailing running average of xs over window
// points: out[i] is the mean of the values of xs[max(0, i−window+1) .. i]
// that are not NaN (the first points average what is there so far), and NaN
// where all of them are NaN. A window below 1 is taken as 1.
func RunningAverage(xs []float64, window int) []float64 {
	if window < 1 {
		window = 1
	}
	out := make([]float64, len(xs))
	var sum float64
	var n int
	for i, x := range xs {
		if !math.IsNaN(x) {
			sum += x
			n++
		}
		if j := i - window; j >= 0 && !math.IsNaN(xs[j]) {
			sum -= xs[j]
			n--
		}
		if n == 0 {
			out[i] = math.NaN()
			sum = 0 // drop accumulated rounding error
			continue
		}
		out[i] = sum / float64(n)
	}
	return out
}

// RunningAverageBy is a trailing running average over a span of x rather
// than a count of points, for series sampled at uneven steps: out[i] is the
// mean of the non-NaN y[j] with x[i] − width < x[j] ≤ x[i]. x must be sorted
// ascending; the window always holds x[i] itself, whatever width. For
// x = 0, 1, 2, … it equals RunningAverage(y, width).
func RunningAverageBy(x, y []float64, width float64) ([]float64, error) {
	if len(x) != len(y) {
		return nil, fmt.Errorf("stats.RunningAverageBy: %d x and %d y: %w", len(x), len(y), ErrLength)
	}
	for i := 1; i < len(x); i++ {
		if !(x[i] >= x[i-1]) {
			return nil, fmt.Errorf("stats.RunningAverageBy: x[%d] = %v after %v: %w", i, x[i], x[i-1], ErrRange)
		}
	}
	out := make([]float64, len(y))
	lo := 0
	var sum float64
	var n int
	for i := range x {
		if !math.IsNaN(y[i]) {
			sum += y[i]
			n++
		}
		for lo < i && x[lo] <= x[i]-width {
			if !math.IsNaN(y[lo]) {
				sum -= y[lo]
				n--
			}
			lo++
		}
		if n == 0 {
			out[i] = math.NaN()
			sum = 0
			continue
		}
		out[i] = sum / float64(n)
	}
	return out, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func toFloats(a []int) []float64 {
	out := make([]float64, len(a))
	for i, v := range a {
		out[i] = float64(v)
	}
	return out
}
