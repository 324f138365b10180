package stats

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

const tol = 1e-9

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol
}

func nearAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestMeanSD(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		xs       []float64
		mean, sd float64
	}{
		{nil, nan, nan},
		{[]float64{5}, 5, 0}, // n = 1: SD 0 by convention
		// mean 3/2; squared deviations .25 + .25 = .5; /(2−1) = .5; sqrt = .70710678…
		{[]float64{1, 2}, 1.5, math.Sqrt(0.5)},
		// mean 70; squared deviations 100 + 0 + 100 = 200; /(3−1) = 100; sqrt = 10
		{[]float64{60, 70, 80}, 70, 10},
		// mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32; /(8−1); sqrt(32/7) = 2.13809
		// (the population SD, ddof 0, would be sqrt(32/8) = 2).
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7)},
		{[]float64{-1, -1, -1}, -1, 0},
	}
	for _, tt := range tests {
		m, s := MeanSD(tt.xs)
		if !near(m, tt.mean) || !near(s, tt.sd) {
			t.Errorf("MeanSD(%v) = %v, %v, want %v, %v", tt.xs, m, s, tt.mean, tt.sd)
		}
	}
}

func TestSummaryString(t *testing.T) {
	tests := []struct {
		xs   []float64
		want string
	}{
		{nil, "–"},
		{[]float64{60, 70, 80}, "70.0 ± 10.0"},
		{[]float64{62.5}, "62.5 ± 0.0"},
	}
	for _, tt := range tests {
		if got := Summarize(tt.xs).String(); got != tt.want {
			t.Errorf("Summarize(%v).String() = %q, want %q", tt.xs, got, tt.want)
		}
	}
}

func TestWinRate(t *testing.T) {
	tests := []struct {
		in      []Outcome
		want    WinRateResult
		wantErr error
	}{
		// (2 wins + 0.5 × 1 tie) / 4 = 0.625
		{[]Outcome{Win, Win, Tie, Loss}, WinRateResult{Wins: 2, Ties: 1, Losses: 1, Percent: 62.5}, nil},
		// (0 + 0.5 × 2) / 2 = 0.5
		{[]Outcome{Tie, Tie}, WinRateResult{Ties: 2, Percent: 50}, nil},
		{[]Outcome{Loss}, WinRateResult{Losses: 1, Percent: 0}, nil},
		// (1 + 0.5 × 1) / 3 = 0.5
		{[]Outcome{Win, Loss, Tie}, WinRateResult{Wins: 1, Ties: 1, Losses: 1, Percent: 50}, nil},
		{nil, WinRateResult{}, ErrEmpty},
		{[]Outcome{Win, 0}, WinRateResult{}, ErrRange},
	}
	for _, tt := range tests {
		got, err := WinRate(tt.in)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("WinRate(%v) error = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("WinRate(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseOutcome(t *testing.T) {
	for _, o := range []Outcome{Win, Tie, Loss} {
		got, err := ParseOutcome(o.String())
		if err != nil || got != o {
			t.Errorf("ParseOutcome(%q) = %v, %v, want %v", o.String(), got, err, o)
		}
	}
	if _, err := ParseOutcome("draw"); !errors.Is(err, ErrRange) {
		t.Errorf("ParseOutcome(%q) error = %v, want %v", "draw", err, ErrRange)
	}
}

func TestPearson(t *testing.T) {
	tests := []struct {
		x, y    []float64
		want    float64
		wantErr error
	}{
		{[]float64{1, 2, 3}, []float64{2, 4, 6}, 1, nil},
		{[]float64{1, 2, 3}, []float64{3, 2, 1}, -1, nil},
		// means 2.5, 2.5; dx = −1.5 −.5 .5 1.5; dy = −1.5 .5 −.5 1.5
		// Σdxdy = 2.25 − .25 − .25 + 2.25 = 4; Σdx² = Σdy² = 5; r = 4/5
		{[]float64{1, 2, 3, 4}, []float64{1, 3, 2, 4}, 0.8, nil},
		// means 2, 2; dx = −1 0 1; dy = 0 0 0 … y constant
		{[]float64{1, 2, 3}, []float64{2, 2, 2}, 0, ErrConstant},
		{[]float64{4, 4}, []float64{1, 2}, 0, ErrConstant},
		{[]float64{1, 2}, []float64{1}, 0, ErrLength},
		{[]float64{1}, []float64{1}, 0, ErrEmpty},
		{[]float64{1, math.NaN()}, []float64{1, 2}, 0, ErrNonFinite},
		{[]float64{1, 2}, []float64{math.Inf(1), 2}, 0, ErrNonFinite},
	}
	for _, tt := range tests {
		got, err := Pearson(tt.x, tt.y)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Pearson(%v, %v) error = %v, want %v", tt.x, tt.y, err, tt.wantErr)
			continue
		}
		if err == nil && !near(got, tt.want) {
			t.Errorf("Pearson(%v, %v) = %v, want %v", tt.x, tt.y, got, tt.want)
		}
	}
}

func TestAgreementPercent(t *testing.T) {
	tests := []struct {
		a, b          []int
		exact, within float64
		wantErr       error
	}{
		// differences 0 1 0 2 0: equal 3/5 = 60 %, within 1: 4/5 = 80 %
		{[]int{1, 2, 3, 4, 5}, []int{1, 3, 3, 2, 5}, 60, 80, nil},
		// differences 1 1 1 1: equal 0 %, within 1: 100 %
		{[]int{1, 2, 3, 4}, []int{2, 3, 4, 5}, 0, 100, nil},
		{[]int{1}, []int{1, 2}, 0, 0, ErrLength},
		{nil, nil, 0, 0, ErrEmpty},
	}
	for _, tt := range tests {
		exact, err := ExactAgreement(tt.a, tt.b)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("ExactAgreement(%v, %v) error = %v, want %v", tt.a, tt.b, err, tt.wantErr)
			continue
		}
		within, err := WithinOneAgreement(tt.a, tt.b)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("WithinOneAgreement(%v, %v) error = %v, want %v", tt.a, tt.b, err, tt.wantErr)
			continue
		}
		if !near(exact, tt.exact) {
			t.Errorf("ExactAgreement(%v, %v) = %v, want %v", tt.a, tt.b, exact, tt.exact)
		}
		if !near(within, tt.within) {
			t.Errorf("WithinOneAgreement(%v, %v) = %v, want %v", tt.a, tt.b, within, tt.within)
		}
	}
}

func TestConfusionMatrix(t *testing.T) {
	got, err := ConfusionMatrix([]int{1, 2, 2, 3}, []int{1, 2, 3, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 0, 0}, {0, 1, 1}, {0, 0, 1}}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("ConfusionMatrix = %v, want %v", got, want)
			}
		}
	}
	for _, tt := range []struct {
		a, b []int
		k    int
		want error
	}{
		{[]int{0}, []int{1}, 3, ErrRange},
		{[]int{1}, []int{4}, 3, ErrRange},
		{[]int{1}, []int{1}, 0, ErrRange},
		{[]int{1}, []int{1, 1}, 3, ErrLength},
	} {
		if _, err := ConfusionMatrix(tt.a, tt.b, tt.k); !errors.Is(err, tt.want) {
			t.Errorf("ConfusionMatrix(%v, %v, %d) error = %v, want %v", tt.a, tt.b, tt.k, err, tt.want)
		}
	}
}

func TestQuadraticKappa(t *testing.T) {
	tests := []struct {
		a, b    []int
		k       int
		want    float64
		wantErr error
	}{
		{[]int{1, 2, 3}, []int{1, 2, 3}, 3, 1, nil},
		// O has (1,1) (2,3) (3,3) (4,2) (5,5); Σ(i−j)²O = 0+1+0+4+0 = 5.
		// Row sums all 1; column sums (1,1,2,0,1); N = 5.
		// S_j = Σ_i (i−j)² over i = 1..5: 30 15 10 15 30.
		// Σ(i−j)²E = Σ_j col_j·S_j / 5 = (30 + 15 + 2·10 + 0 + 30)/5 = 95/5 = 19.
		// κ = 1 − 5/19 = 14/19.
		{[]int{1, 2, 3, 4, 5}, []int{1, 3, 3, 2, 5}, 5, 14.0 / 19, nil},
		// a constant 3, b = 1 3 5: Σ(i−j)²O = 4 + 0 + 4 = 8;
		// E row 3 only: (3·1·4 + 3·1·0 + 3·1·4)/3 = 8; κ = 1 − 8/8 = 0.
		{[]int{3, 3, 3}, []int{1, 3, 5}, 5, 0, nil},
		// O (1,2) (2,1): Σ(i−j)²O = 2; rows = cols = (1,1); Σ(i−j)²E = (0+1+1+0)/2 = 1; κ = 1 − 2 = −1.
		{[]int{1, 2}, []int{2, 1}, 2, -1, nil},
		// Both raters constant and equal: Σ(i−j)²E = 0.
		{[]int{4, 4}, []int{4, 4}, 5, 0, ErrUndefined},
		{[]int{1, 6}, []int{1, 2}, 5, 0, ErrRange},
		{nil, nil, 5, 0, ErrEmpty},
	}
	for _, tt := range tests {
		got, err := QuadraticKappa(tt.a, tt.b, tt.k)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("QuadraticKappa(%v, %v, %d) error = %v, want %v", tt.a, tt.b, tt.k, err, tt.wantErr)
			continue
		}
		if err == nil && !near(got, tt.want) {
			t.Errorf("QuadraticKappa(%v, %v, %d) = %v, want %v", tt.a, tt.b, tt.k, got, tt.want)
		}
	}
}

func TestAgree(t *testing.T) {
	// The example of TestQuadraticKappa and TestAgreementPercent.
	got, err := Agree([]int{1, 2, 3, 4, 5}, []int{1, 3, 3, 2, 5}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got.N != 5 || !near(got.Exact, 60) || !near(got.WithinOne, 80) || got.Kappa == nil || !near(*got.Kappa, 14.0/19) || got.Pearson == nil {
		t.Errorf("Agree = %+v, want N 5, exact 60, within 80, kappa 14/19", got)
	}
	// mean a = 3, mean b = 14/5 = 2.8; dx = −2 −1 0 1 2; dy = −1.8 .2 .2 −.8 2.2
	// Σdxdy = 3.6 − .2 + 0 − .8 + 4.4 = 7; Σdx² = 10; Σdy² = 3.24+.04+.04+.64+4.84 = 8.8
	// r = 7 / sqrt(88)
	if want := 7 / math.Sqrt(88); !near(*got.Pearson, want) {
		t.Errorf("Agree Pearson = %v, want %v", *got.Pearson, want)
	}

	// A constant rater: Pearson undefined (nil) and encoded as JSON null.
	got, err = Agree([]int{3, 3, 3}, []int{1, 3, 5}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pearson != nil || got.Kappa == nil || !near(*got.Kappa, 0) {
		t.Errorf("Agree(constant) = %+v, want nil Pearson and kappa 0", got)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("json.Marshal(%+v): %v", got, err)
	}
	if want := `{"n":3,"exact":33.333333333333336,"within_one":33.333333333333336,"pearson":null,"kappa":0}`; string(b) != want {
		t.Errorf("json.Marshal(Agree) = %s, want %s", b, want)
	}

	if _, err := Agree([]int{1}, []int{7}, 5); !errors.Is(err, ErrRange) {
		t.Errorf("Agree(out of range) error = %v, want %v", err, ErrRange)
	}
}

func TestRunningAverage(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		xs     []float64
		window int
		want   []float64
	}{
		// (1)/1, (1+2)/2, (2+3)/2, (3+4)/2, (4+5)/2
		{[]float64{1, 2, 3, 4, 5}, 2, []float64{1, 1.5, 2.5, 3.5, 4.5}},
		// 1, 3/2, 6/3, 9/3, 12/3
		{[]float64{1, 2, 3, 4, 5}, 3, []float64{1, 1.5, 2, 3, 4}},
		// window larger than the series: cumulative mean
		{[]float64{2, 4, 9}, 50, []float64{2, 3, 5}},
		{[]float64{1, 2, 3}, 0, []float64{1, 2, 3}},
		{[]float64{1, 2, 3}, 1, []float64{1, 2, 3}},
		// NaN skipped: {1}, {1,NaN}, {NaN,3}, {3,NaN}, {NaN,NaN}
		{[]float64{1, nan, 3, nan, nan}, 2, []float64{1, 1, 3, 3, nan}},
		{[]float64{nan, nan, 4}, 2, []float64{nan, nan, 4}},
		{nil, 3, []float64{}},
	}
	for _, tt := range tests {
		if got := RunningAverage(tt.xs, tt.window); !nearAll(got, tt.want) {
			t.Errorf("RunningAverage(%v, %d) = %v, want %v", tt.xs, tt.window, got, tt.want)
		}
	}
}

func TestRunningAverageBy(t *testing.T) {
	// width 20: windows (−20,0] (−10,10] (0,20] (5,25] (30,50]
	x := []float64{0, 10, 20, 25, 50}
	y := []float64{1, 2, 3, 4, 5}
	got, err := RunningAverageBy(x, y, 20)
	if err != nil {
		t.Fatal(err)
	}
	// {1}, {1,2}, {2,3}, {2,3,4}, {5}
	if want := []float64{1, 1.5, 2.5, 3, 5}; !nearAll(got, want) {
		t.Errorf("RunningAverageBy(%v, %v, 20) = %v, want %v", x, y, got, want)
	}

	// On unit steps it is RunningAverage.
	ys := []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, math.NaN(), 8}
	xs := make([]float64, len(ys))
	for i := range xs {
		xs[i] = float64(i)
	}
	for _, w := range []int{1, 3, 5, 50} {
		got, err := RunningAverageBy(xs, ys, float64(w))
		if err != nil {
			t.Fatal(err)
		}
		if want := RunningAverage(ys, w); !nearAll(got, want) {
			t.Errorf("RunningAverageBy(0..n, %v, %d) = %v, want %v", ys, w, got, want)
		}
	}

	if _, err := RunningAverageBy([]float64{2, 1}, []float64{1, 1}, 5); !errors.Is(err, ErrRange) {
		t.Errorf("RunningAverageBy(unsorted) error = %v, want %v", err, ErrRange)
	}
	if _, err := RunningAverageBy([]float64{1}, nil, 5); !errors.Is(err, ErrLength) {
		t.Errorf("RunningAverageBy(lengths) error = %v, want %v", err, ErrLength)
	}
}

func BenchmarkRunningAverage(b *testing.B) {
	xs := make([]float64, 100000)
	for i := range xs {
		xs[i] = float64(i % 7)
	}
	for b.Loop() {
		RunningAverage(xs, 50)
	}
}
