package roundrobin

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
)

// Resample draws len(cells) cells with replacement: the bootstrap of seed
// 001, at the ordered-pairing level, so that every game of a pairing
// travels with it and the agents stay fixed. A cell drawn twice is the
// same pairing twice (MoM counts its copies' shared matchup and games).
func Resample(cells []Cell, rng *rand.Rand) []Cell {
	out := make([]Cell, len(cells))
	for i := range out {
		out[i] = cells[rng.IntN(len(cells))]
	}
	return out
}

// Bootstrap computes stat on b resamples of cells (Resample). Resample i
// draws from its own generator, seeded by (seed, i), so the result does
// not depend on scheduling. It returns one row of stat's values per
// resample (nil where stat failed) and the number of failures.
func Bootstrap(cells []Cell, b int, seed uint64, stat func([]Cell) ([]float64, error)) ([][]float64, int) {
	out := make([][]float64, b)
	var failed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rng := rand.New(rand.NewPCG(seed, uint64(i)+0x9e3779b97f4a7c15))
				v, err := stat(Resample(cells, rng))
				mu.Lock()
				if err != nil {
					failed++
				} else {
					out[i] = v
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < b; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, failed
}

// Column returns column j of the bootstrap rows, skipping failed rows
// and NaN values (a statistic left undefined, such as the ratio of two
// zero components). Infinite values are kept: a resample whose ratio is
// +Inf (its requester component zero) is among the largest values, and
// Interval's percentiles count it there; dropping it would pull the upper
// limit down to the largest finite value and can leave an infinite point
// estimate outside its own interval.
func Column(rows [][]float64, j int) []float64 {
	var out []float64
	for _, r := range rows {
		if r != nil && j < len(r) && !math.IsNaN(r[j]) {
			out = append(out, r[j])
		}
	}
	return out
}

// Percentile is the q-quantile (0 ≤ q ≤ 1) of xs by linear interpolation
// between order statistics (numpy's default, type 7); NaN when xs is
// empty. Infinite values sort as the extremes: a quantile that
// interpolates towards one is that infinity (where numpy's arithmetic
// would give NaN for −Inf), one that falls exactly on a finite order
// statistic is that value.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	if int(lo) >= len(s)-1 {
		return s[len(s)-1]
	}
	a, b, t := s[int(lo)], s[int(lo)+1], h-lo
	switch {
	case t == 0 || a == b:
		return a
	case math.IsInf(a, 0):
		return a
	case math.IsInf(b, 0):
		return b
	}
	return a + t*(b-a)
}

// Interval is the central percentile interval of level (0.95: the 2.5th
// and 97.5th percentiles).
func Interval(xs []float64, level float64) (lo, hi float64) {
	a := (1 - level) / 2
	return Percentile(xs, a), Percentile(xs, 1-a)
}
