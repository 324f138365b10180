package stats

import (
	"math"
	"testing"
)

// TestGlicko2PaperExample is the worked example of Glickman's "Example of
// the Glicko-2 system": a 1500/200/0.06 player beats a 1400/30, loses to
// a 1550/100 and to a 1700/300 in one period, τ = 0.5.
func TestGlicko2PaperExample(t *testing.T) {
	p := Glicko2Rating{R: 1500, RD: 200, Sigma: 0.06}
	games := []Glicko2Game{
		{Opponent: Glicko2Rating{R: 1400, RD: 30, Sigma: 0.06}, Score: 1},
		{Opponent: Glicko2Rating{R: 1550, RD: 100, Sigma: 0.06}, Score: 0},
		{Opponent: Glicko2Rating{R: 1700, RD: 300, Sigma: 0.06}, Score: 0},
	}
	got := Glicko2Update(p, games, 0.5)
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"r'", got.R, 1464.06, 0.01},
		{"RD'", got.RD, 151.52, 0.01},
		{"σ'", got.Sigma, 0.05999, 0.00001},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("Glicko2Update(paper example) %s = %.5f, want %.5f ± %g", c.name, c.got, c.want, c.tol)
		}
	}
}

func TestGlicko2Idle(t *testing.T) {
	for _, tc := range []struct {
		in     Glicko2Rating
		wantRD float64
	}{
		{Glicko2Rating{R: 1600, RD: 50, Sigma: 0.06}, math.Sqrt(50*50 + (0.06*glickoScale)*(0.06*glickoScale))},
		{Glicko2Rating{R: 1600, RD: 349.9, Sigma: 0.06}, 350}, // capped
	} {
		got := Glicko2Update(tc.in, nil, 0)
		if got.R != tc.in.R || got.Sigma != tc.in.Sigma || math.Abs(got.RD-tc.wantRD) > 1e-9 {
			t.Errorf("Glicko2Update(%v, no games) = %v, want R and σ kept, RD %.4f", tc.in, got, tc.wantRD)
		}
	}
}

func TestGlicko2Expected(t *testing.T) {
	a, b := Glicko2Rating{R: 1700, RD: 50}, Glicko2Rating{R: 1500, RD: 50}
	if p, q := Glicko2Expected(a, b), Glicko2Expected(b, a); math.Abs(p+q-1) > 1e-12 || p <= 0.5 {
		t.Errorf("Glicko2Expected = %v and %v, want complementary with the stronger above ½", p, q)
	}
	unsure := Glicko2Rating{R: 1700, RD: 350}
	if Glicko2Expected(unsure, b) >= Glicko2Expected(a, b) {
		t.Error("an uncertain rating should pull the expected score toward ½")
	}
}
