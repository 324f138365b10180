package report

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestFlatZero: a panel is left out when every value of its keys is
// within zeroTol of 0 (floating-point noise such as an on-policy KL), and
// the note says whether the values were exactly 0.
func TestFlatZero(t *testing.T) {
	tests := []struct {
		name        string
		values      []float64
		zero, exact bool
	}{
		{"exact zeros", []float64{0, 0, 0}, true, true},
		{"noise", []float64{0, -5e-9, 3e-10}, true, false},
		{"at the tolerance", []float64{zeroTol, -zeroTol}, true, false},
		{"a real value", []float64{0, 2e-6, 0}, false, false},
		{"no points", nil, false, true},
	}
	c := panel{lines: []chartLine{{key: "k"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for i, v := range tt.values {
				lines = append(lines, fmt.Sprintf(`{"step": %d, "k": %s}`, i+1, strconv.FormatFloat(v, 'g', -1, 64)))
			}
			m, err := decodeMetrics(strings.NewReader(strings.Join(lines, "\n")), "metrics.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			zero, n, exact := flatZero(m, c)
			if zero != tt.zero || (zero && (exact != tt.exact || n != len(tt.values))) {
				t.Errorf("flatZero(%v) = %v, %d, exact %v; want %v, %d, exact %v", tt.values, zero, n, exact, tt.zero, len(tt.values), tt.exact)
			}
		})
	}
}
