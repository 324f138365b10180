package stats

import (
	"fmt"
	"sort"
)

// Ranks returns the ranks of xs from 1, ties given their average rank.
func Ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// Spearman is Spearman's rank correlation: Pearson's correlation of the
// ranks, ties given their average rank (scipy.stats.spearmanr).
func Spearman(x, y []float64) (float64, error) {
	if len(x) != len(y) {
		return 0, fmt.Errorf("stats.Spearman: %w", ErrLength)
	}
	for i := range x {
		if !finite(x[i]) || !finite(y[i]) {
			return 0, fmt.Errorf("stats.Spearman: %w", ErrNonFinite)
		}
	}
	r, err := Pearson(Ranks(x), Ranks(y))
	if err != nil {
		return 0, fmt.Errorf("stats.Spearman: %w", err)
	}
	return r, nil
}
