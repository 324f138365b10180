package multiparty

import (
	"fmt"
	"testing"
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
