package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestSpearmanScipy: against scipy.stats.spearmanr (ties included).
func TestSpearmanScipy(t *testing.T) {
	var cases []struct {
		X, Y []float64
		Rho  float64
	}
	readJSON(t, "spearman.json", &cases)
	if len(cases) != 3 {
		t.Fatalf("%d cases", len(cases))
	}
	for i, c := range cases {
		got, err := Spearman(c.X, c.Y)
		if err != nil || math.Abs(got-c.Rho) > 1e-12 {
			t.Errorf("case %d: Spearman = %v, %v; scipy %v", i, got, err, c.Rho)
		}
	}
	if _, err := Spearman([]float64{1, 1, 1}, []float64{1, 2, 3}); err == nil {
		t.Error("constant input accepted")
	}
	if got := Ranks([]float64{3, 1, 3, 2}); got[0] != 3.5 || got[1] != 1 || got[2] != 3.5 || got[3] != 2 {
		t.Errorf("Ranks = %v", got)
	}
}

// TestEffectScipyStatsmodels: Cohen's d, its exact intervals (scipy's
// noncentral t) and TOST (statsmodels' ttost_ind, pooled) at three bounds.
func TestEffectScipyStatsmodels(t *testing.T) {
	var f struct {
		Cases []struct {
			X1, X2     []float64
			D          float64
			SDPooled   float64 `json:"sd_pooled"`
			CI90, CI95 []float64
			Tost       []struct {
				Bound, P float64
				PL       float64 `json:"p_lower"`
				PU       float64 `json:"p_upper"`
				TL       float64 `json:"t_lower"`
				TU       float64 `json:"t_upper"`
			}
		}
		TCDF []struct{ T, DF, CDF float64 } `json:"tcdf"`
	}
	readJSON(t, "effect.json", &f)
	if len(f.Cases) != 3 || len(f.TCDF) != 30 || len(f.Cases[0].Tost) != 3 {
		t.Fatalf("fixture: %d cases, %d t points", len(f.Cases), len(f.TCDF))
	}
	for i, c := range f.Cases {
		d, err := Cohen(c.X1, c.X2)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(d.D-c.D) > 1e-12 || math.Abs(d.SDPooled-c.SDPooled) > 1e-12 {
			t.Errorf("case %d: d %v sd %v, want %v %v", i, d.D, d.SDPooled, c.D, c.SDPooled)
		}
		for _, iv := range []struct {
			level float64
			want  []float64
		}{{0.90, c.CI90}, {0.95, c.CI95}} {
			lo, hi := d.Interval(iv.level)
			if math.Abs(lo-iv.want[0]) > 1e-6 || math.Abs(hi-iv.want[1]) > 1e-6 {
				t.Errorf("case %d: %.0f%% interval [%.7f, %.7f], scipy [%.7f, %.7f]", i, 100*iv.level, lo, hi, iv.want[0], iv.want[1])
			}
		}
		for _, w := range c.Tost {
			got := d.Tost(w.Bound)
			if math.Abs(got.P-w.P) > 1e-9 || math.Abs(got.PLower-w.PL) > 1e-9 || math.Abs(got.PUpper-w.PU) > 1e-9 ||
				math.Abs(got.TLower-w.TL) > 1e-9 || math.Abs(got.TUpper-w.TU) > 1e-9 {
				t.Errorf("case %d bound %v: TOST %+v, statsmodels p %v (%v, %v) t (%v, %v)", i, w.Bound, got, w.P, w.PL, w.PU, w.TL, w.TU)
			}
		}
	}
	for _, p := range f.TCDF {
		if got := StudentTCDF(p.T, p.DF); math.Abs(got-p.CDF) > 1e-12 {
			t.Errorf("StudentTCDF(%v, %v) = %.15g, scipy %.15g", p.T, p.DF, got, p.CDF)
		}
	}
}

// TestEloFixture: ratings in one order, and the average over all 720
// orders of six games, against the Python fixture; the random-order
// average converges to it.
func TestEloFixture(t *testing.T) {
	var f struct {
		Games     []EloGame
		InOrder   map[string]map[string]float64 `json:"in_order"`
		AllOrders map[string]map[string]float64 `json:"all_orders"`
	}
	readJSON(t, "elo.json", &f)
	if len(f.Games) != 6 || len(f.AllOrders["holder"]) != 3 {
		t.Fatalf("fixture: %+v", f)
	}
	check := func(name string, got EloRatings, want map[string]map[string]float64, tol float64) {
		for k, v := range want["requester"] {
			if math.Abs(got.Requester[k]-v) > tol {
				t.Errorf("%s: requester %s = %.6f, want %.6f", name, k, got.Requester[k], v)
			}
		}
		for k, v := range want["holder"] {
			if math.Abs(got.Holder[k]-v) > tol {
				t.Errorf("%s: holder %s = %.6f, want %.6f", name, k, got.Holder[k], v)
			}
		}
	}
	check("in order", Elo(f.Games, nil, EloOptions{}), f.InOrder, 1e-9)
	var all [][]int
	var perm func(p []int, k int)
	perm = func(p []int, k int) {
		if k == len(p) {
			all = append(all, append([]int(nil), p...))
			return
		}
		for i := k; i < len(p); i++ {
			p[k], p[i] = p[i], p[k]
			perm(p, k+1)
			p[k], p[i] = p[i], p[k]
		}
	}
	perm([]int{0, 1, 2, 3, 4, 5}, 0)
	check("all orders", EloOver(f.Games, all, EloOptions{}), f.AllOrders, 1e-9)
	check("random orders", EloAverage(f.Games, EloOptions{Permutations: 20000, Seed: 1}), f.AllOrders, 0.5)
	// Order-independence: two seeds agree closely.
	a := EloAverage(f.Games, EloOptions{Permutations: 20000, Seed: 2})
	b := EloAverage(f.Games, EloOptions{Permutations: 20000, Seed: 3})
	for k := range a.Holder {
		if math.Abs(a.Holder[k]-b.Holder[k]) > 0.5 {
			t.Errorf("holder %s: %.3f vs %.3f across seeds", k, a.Holder[k], b.Holder[k])
		}
	}
}

// TestNoncentralTScipy: the noncentral t distribution function and the
// exact intervals of Cohen's d against scipy (testdata/nct.json) from 1 to
// 200 degrees of freedom. Below about 10 the density of the integration
// variable was missed by the first samples: the CDF came out ~1e-30 and
// the intervals collapsed to one end of the bisection's bracket (5 + 5
// games, d = −0.591: [−8.180, −8.180], scipy [−1.641, 0.494]).
func TestNoncentralTScipy(t *testing.T) {
	var f struct {
		CDF []struct {
			T, DF, NC, CDF float64
		}
		Intervals []struct {
			N1, N2     int
			D          float64
			CI90, CI95 []float64
		}
	}
	readJSON(t, "nct.json", &f)
	if len(f.CDF) < 1000 || len(f.Intervals) < 60 {
		t.Fatalf("fixture: %d CDF points, %d intervals", len(f.CDF), len(f.Intervals))
	}
	for _, p := range f.CDF {
		got := NoncentralTCDF(p.T, p.DF, p.NC)
		if math.Abs(got-p.CDF) > 1e-10+1e-7*math.Min(p.CDF, 1-p.CDF) {
			t.Errorf("NoncentralTCDF(%v, %v, %v) = %.12g, scipy %.12g", p.T, p.DF, p.NC, got, p.CDF)
		}
	}
	for _, c := range f.Intervals {
		d := CohenD{D: c.D, N1: c.N1, N2: c.N2}
		for _, iv := range []struct {
			level float64
			want  []float64
		}{{0.90, c.CI90}, {0.95, c.CI95}} {
			lo, hi := d.Interval(iv.level)
			if math.Abs(lo-iv.want[0]) > 1e-7 || math.Abs(hi-iv.want[1]) > 1e-7 {
				t.Errorf("d = %v, n %d + %d (df %d): %.0f%% interval [%.7f, %.7f], scipy [%.7f, %.7f]",
					c.D, c.N1, c.N2, c.N1+c.N2-2, 100*iv.level, lo, hi, iv.want[0], iv.want[1])
			}
		}
	}
}

// BenchmarkNoncentralTCDF is one value at few and at seed 001's degrees
// of freedom.
func BenchmarkNoncentralTCDF(b *testing.B) {
	for _, df := range []float64{2, 1047} {
		b.Run(fmt.Sprintf("df%g", df), func(b *testing.B) {
			for b.Loop() {
				NoncentralTCDF(0.5, df, 1)
			}
		})
	}
}

// BenchmarkCohenInterval is the exact 90% interval at 5 + 5 games and at
// seed 001's 524 + 525.
func BenchmarkCohenInterval(b *testing.B) {
	for _, n := range [][2]int{{5, 5}, {524, 525}} {
		b.Run(fmt.Sprintf("n%d+%d", n[0], n[1]), func(b *testing.B) {
			for b.Loop() {
				CohenD{D: -0.068, N1: n[0], N2: n[1]}.Interval(0.90)
			}
		})
	}
}
