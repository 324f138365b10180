package grpo

import (
	"math"
	"testing"
)

// TestGroupAdvantages: the per-(group, role) formula on its own, by hand:
// (r − mean)/(std + ε) with the population or the sample std, r − mean for
// Dr. GRPO, and 0 exactly for a zero-variance group.
func TestGroupAdvantages(t *testing.T) {
	const eps = DefaultEpsilon
	half := 0.5 / (0.5 + eps)                  // [1 0]: mean 0.5, population std 0.5
	halfSample := 0.5 / (math.Sqrt(0.5) + eps) // sample std √0.5
	tests := []struct {
		name    string
		rewards []float64
		opts    AdvantageOptions
		want    []float64
	}{
		{"group, population std", []float64{1, 0}, AdvantageOptions{Mode: ModeGroup, Epsilon: eps}, []float64{half, -half}},
		{"group, sample std", []float64{1, 0}, AdvantageOptions{Mode: ModeGroup, Epsilon: eps, StdDDOF: 1}, []float64{halfSample, -halfSample}},
		{"group, epsilon 1e-4", []float64{3, 1, 2}, AdvantageOptions{Mode: ModeGroup, Epsilon: 1e-4},
			[]float64{1 / (math.Sqrt(2.0/3) + 1e-4), -1 / (math.Sqrt(2.0/3) + 1e-4), 0}},
		{"group mean (Dr. GRPO)", []float64{1, 2, 3}, AdvantageOptions{Mode: ModeGroupMean, Epsilon: eps}, []float64{-1, 0, 1}},
		{"zero variance", []float64{0.25, 0.25, 0.25}, AdvantageOptions{Mode: ModeGroup, Epsilon: eps}, []float64{0, 0, 0}},
		{"within the tolerance", []float64{1, 1 + ZeroVarianceTolerance/2}, AdvantageOptions{Mode: ModeGroup, Epsilon: eps}, []float64{0, 0}},
		{"one rollout", []float64{4}, AdvantageOptions{Mode: ModeGroupMean, Epsilon: eps}, []float64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := groupAdvantages(tt.rewards, tt.opts)
			if len(got) != len(tt.want) {
				t.Fatalf("groupAdvantages(%v) = %v, want %v", tt.rewards, got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-12 {
					t.Errorf("groupAdvantages(%v) = %v, want %v", tt.rewards, got, tt.want)
					break
				}
			}
		})
	}
}
