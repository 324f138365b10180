package endowment

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRatioCI: an infinite limit of the holder : requester ratio's
// interval prints as ∞ (unbounded), a finite one of 1000 or more as ≥1000.
func TestRatioCI(t *testing.T) {
	inf := math.Inf(1)
	for _, tt := range []struct {
		iv   Interval
		want string
	}{
		{Interval{Point: 5, Lo: 2.1, Hi: 77.9}, "[2.1, 77.9]"},
		{Interval{Point: inf, Lo: 2.1, Hi: inf}, "[2.1, ∞]"},
		{Interval{Point: 2000, Lo: 1500, Hi: 3000}, "[≥1000, ≥1000]"},
		{Interval{Point: inf, Lo: inf, Hi: inf}, "[∞, ∞]"},
		{nan3(), "—"},
	} {
		if got := ratioCI(tt.iv); got != tt.want {
			t.Errorf("ratioCI(%+v) = %q, want %q", tt.iv, got, tt.want)
		}
	}
}

// TestBudgetRatioHoldsInfinitePoint: a one-round tournament whose
// requester variance is estimated at zero has an infinite holder :
// requester ratio, and so do many of its resamples; the ratio's interval
// counts them as the largest values, so it holds its own point estimate
// and its upper limit is unbounded.
func TestBudgetRatioHoldsInfinitePoint(t *testing.T) {
	const n = 6
	rng := rand.New(rand.NewPCG(1, 9))
	holder := make([]float64, n)
	for i := range holder {
		holder[i] = 0.3 * rng.NormFloat64()
	}
	var games []game
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			for _, hr := range [][2]int{{i, j}, {j, i}} {
				games = append(games, game{h: hr[0], r: hr[1], share: 0.5 + holder[hr[0]] + 0.2*rng.NormFloat64()})
			}
		}
	}
	res := budget("one round", games, 1000, 7, false)
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	r := res.Ratio
	t.Logf("ratio %v [%v, %v], %d resamples (%d failed); printed %s", r.Point, r.Lo, r.Hi, res.Resamples, res.FailedResamples, ratioCI(r))
	if !math.IsInf(r.Point, 1) {
		t.Fatalf("the fixture's ratio is %v, want +Inf (requester variance estimated at zero)", r.Point)
	}
	if !(r.Lo <= r.Point && r.Point <= r.Hi) {
		t.Errorf("the ratio %v lies outside its own interval [%v, %v]", r.Point, r.Lo, r.Hi)
	}
	if !strings.HasSuffix(ratioCI(r), ", ∞]") {
		t.Errorf("the interval prints as %s, want an unbounded upper limit (∞)", ratioCI(r))
	}
}
