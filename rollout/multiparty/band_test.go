package multiparty

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// TestClampBand: a 95% band is clipped to its measure's range, and values
// inside it are kept.
func TestClampBand(t *testing.T) {
	tests := []struct {
		lo, hi         []float64
		lower, upper   float64
		wantLo, wantHi []float64
	}{
		{[]float64{-12, 40}, []float64{130, 60}, 0, 100, []float64{0, 40}, []float64{100, 60}},
		{[]float64{-1.3}, []float64{0.2}, -1, 1, []float64{-1}, []float64{0.2}},
		{nil, nil, 0, 100, nil, nil},
	}
	for _, tt := range tests {
		clampBand(tt.lo, tt.hi, tt.lower, tt.upper)
		if fmt.Sprint(tt.lo, tt.hi) != fmt.Sprint(tt.wantLo, tt.wantHi) {
			t.Errorf("clampBand to [%g, %g] = %v, %v; want %v, %v", tt.lower, tt.upper, tt.lo, tt.hi, tt.wantLo, tt.wantHi)
		}
	}
}

// TestAcceptanceBarsClipped: figure 10's error bars are clipped to a
// rate's range as the figures' bands are. High-trust acceptance in three
// series: 100, 100 and 60 % (5 of 5, 5 of 5, 3 of 5): mean 86.7, SD 23.1,
// t(0.975, 2) = 4.3027 → 86.7 ± 57.4, clipped to [29.3, 100].
func TestAcceptanceBarsClipped(t *testing.T) {
	s := trust.Settings{Method: trust.MethodBRS, Condition: trust.CondSP, Lambda: 0.7, Gamma: 0.9, Prior: 0.5}
	var gs []game
	for k, yes := range []int{5, 5, 3} {
		var acc []Acceptance
		for v := 0; v < 5; v++ {
			acc = append(acc, Acceptance{Trust: 0.8, Accepted: v < yes})
		}
		gs = append(gs, game{Episode: Episode{Type: scenario.Type2HB2G, Condition: s.Label(), Settings: s, Accept: acc}, unit: fmt.Sprint("series ", k)})
	}
	groups, bars := acceptanceBars(gs, scenario.Type2HB2G)
	if len(groups) != 1 || groups[0] != s.Label() {
		t.Fatalf("groups %v, want [%s]", groups, s.Label())
	}
	if !bars[0][0].Missing {
		t.Errorf("low trust bar %+v, want it missing (no votes)", bars[0][0])
	}
	hi := bars[1][0]
	if got := fmt.Sprintf("%.1f [%.1f, %.1f]", hi.Value, hi.Lo, hi.Hi); got != "86.7 [29.3, 100.0]" {
		t.Errorf("high trust bar %s, want 86.7 [29.3, 100.0]", got)
	}
}
