package roundrobin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
)

// The coverage study of the bootstrap intervals (issue 28 item 4): many
// synthetic tournaments of seed 001's design (15 agents, 5 rounds, 1,050
// games) with known variance components; for each, the MoM budget's 95%
// intervals from Bootstrap (percentile, as the report prints them; basic
// and BCa for comparison); the share of tournaments whose interval holds
// the true share, against two truths: the population's (the generating
// variances) and the cohort's (the variances of the holder and requester
// effects its 15 agents drew, the others the population's). The
// bootstrap holds the agents fixed, so the cohort's shares are what its
// intervals are for. The README's numbers:
//
//	PARLEY_COVERAGE_TRIALS=200 go test ./stats/roundrobin -run TestBootstrapCoverage -v -timeout 60m

// coverageTruth is the synthetic design's components, as synth takes
// them.
type coverageTruth struct {
	sa, sb, sg, rho, d, se float64
}

// shares are the true shares: with a and b nil the population's (the
// generating variances), else the cohort's, whose holder and requester
// components are the variances (n − 1 divisor) of the effects a and b
// its agents drew.
func (c coverageTruth) shares(a, b []float64) map[string]float64 {
	v := map[string]float64{CompHolder: c.sa * c.sa, CompRequester: c.sb * c.sb, CompMatchup: c.sg * c.sg, CompFraming: c.d * c.d / 4, CompResidual: c.se * c.se}
	if a != nil {
		v[CompHolder], v[CompRequester] = sampleVar(a), sampleVar(b)
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	for k := range v {
		v[k] /= t
	}
	return v
}

// coverageRow is one component's result over the study's tournaments.
type coverageRow struct {
	truth          float64
	meanEst, sdEst float64 // the point estimate over tournaments
	meanBootSD     float64 // the bootstrap's standard deviation, averaged
	meanWidth      float64 // the percentile interval's width, averaged
	// cover, below and above count, by target and interval kind, the
	// tournaments whose interval holds the true share, lies above it
	// (the truth below the lower limit) and below it.
	cover, below, above map[string]float64
	cohortTruth         float64 // the cohort's true share, averaged
	// errMean and errSD are the point estimate's error against the
	// cohort's share (its bias and spread for a cohort); shift is the
	// bootstrap mean's distance from the point estimate, averaged.
	errMean, errSD, shift float64
}

// The study's targets: the population's shares and the cohort's.
var targets = []string{"population", "cohort"}

func sampleVar(xs []float64) float64 {
	var m, v float64
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	for _, x := range xs {
		v += (x - m) * (x - m) / float64(len(xs)-1)
	}
	return v
}

var intervalKinds = []string{"percentile", "basic", "bca"}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
func normQ(p float64) float64   { return -math.Sqrt2 * math.Erfcinv(2*p) }

// bca is the bias-corrected and accelerated percentile interval (Efron
// 1987) of the bootstrap values xs around the point estimate, with the
// acceleration from the jackknife values jack.
func bca(xs []float64, point float64, jack []float64, level float64) (lo, hi float64) {
	less := 0.0
	for _, x := range xs {
		switch {
		case x < point:
			less++
		case x == point:
			less += 0.5
		}
	}
	p0 := less / float64(len(xs))
	p0 = math.Min(math.Max(p0, 0.5/float64(len(xs))), 1-0.5/float64(len(xs)))
	z0 := normQ(p0)
	var jm float64
	for _, j := range jack {
		jm += j / float64(len(jack))
	}
	var num, den float64
	for _, j := range jack {
		num += math.Pow(jm-j, 3)
		den += math.Pow(jm-j, 2)
	}
	a := 0.0
	if den > 0 {
		a = num / (6 * math.Pow(den, 1.5))
	}
	adj := func(q float64) float64 {
		z := normQ(q)
		return normCDF(z0 + (z0+z)/(1-a*(z0+z)))
	}
	al := (1 - level) / 2
	return Percentile(xs, adj(al)), Percentile(xs, adj(1-al))
}

// coverageStudy runs trials tournaments of n agents and reps rounds per
// framing with b resamples each, from seed.
func coverageStudy(truth coverageTruth, n, reps, trials, b int, seed uint64) (map[string]*coverageRow, error) {
	shares := truth.shares(nil, nil)
	comps := []string{CompHolder, CompRequester, CompMatchup, CompResidual}
	rows := map[string]*coverageRow{}
	for _, c := range comps {
		rows[c] = &coverageRow{truth: shares[c], cover: map[string]float64{}, below: map[string]float64{}, above: map[string]float64{}}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	stat := func(cs []Cell) ([]float64, error) {
		bg, err := MoM(cs)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(comps))
		for i, c := range comps {
			out[i] = bg.Share(c)
		}
		return out, nil
	}
	sq, errSq := map[string]float64{}, map[string]float64{}
	for t := 0; t < trials; t++ {
		cells, ea, eb := synthEffects(rng, n, reps, true, truth.sa, truth.sb, truth.sg, truth.rho, truth.d, truth.se)
		cohort := truth.shares(ea, eb)
		point, err := stat(cells)
		if err != nil {
			return nil, fmt.Errorf("tournament %d: %w", t, err)
		}
		bs, _ := Bootstrap(cells, b, seed+uint64(t)*7919, stat)
		// The jackknife over cells, for BCa's acceleration.
		jack := make([][]float64, len(cells))
		for i := range cells {
			rest := append(append([]Cell(nil), cells[:i]...), cells[i+1:]...)
			jack[i], _ = stat(rest)
		}
		for i, c := range comps {
			r := rows[c]
			xs := Column(bs, i)
			r.meanEst += point[i] / float64(trials)
			sq[c] += point[i] * point[i] / float64(trials)
			var m, v float64
			for _, x := range xs {
				m += x / float64(len(xs))
			}
			for _, x := range xs {
				v += (x - m) * (x - m) / float64(len(xs)-1)
			}
			r.meanBootSD += math.Sqrt(v) / float64(trials)
			plo, phi := Interval(xs, 0.95)
			r.meanWidth += (phi - plo) / float64(trials)
			jv := Column(jack, i)
			blo, bhi := bca(xs, point[i], jv, 0.95)
			r.cohortTruth += cohort[c] / float64(trials)
			e := point[i] - cohort[c]
			r.errMean += e / float64(trials)
			errSq[c] += e * e / float64(trials)
			r.shift += (m - point[i]) / float64(trials)
			for _, k := range intervalKinds {
				lo, hi := plo, phi
				switch k {
				case "basic":
					lo, hi = math.Max(0, 2*point[i]-phi), 2*point[i]-plo
				case "bca":
					lo, hi = blo, bhi
				}
				for _, tg := range targets {
					want, key := r.truth, tg+" "+k
					if tg == "cohort" {
						want = cohort[c]
					}
					switch {
					case want < lo:
						r.below[key]++
					case want > hi:
						r.above[key]++
					default:
						r.cover[key]++
					}
				}
			}
		}
	}
	for _, c := range comps {
		r := rows[c]
		r.sdEst = math.Sqrt(sq[c] - r.meanEst*r.meanEst)
		r.errSD = math.Sqrt(errSq[c] - r.errMean*r.errMean)
		for k := range r.cover {
			r.cover[k] /= float64(trials)
		}
		for k := range r.below {
			r.below[k] /= float64(trials)
		}
		for k := range r.above {
			r.above[k] /= float64(trials)
		}
	}
	return rows, nil
}

// TestBootstrapCoverage runs the coverage study: by default a few
// tournaments (the code runs); PARLEY_COVERAGE_TRIALS=200 runs the
// study the README reports (PARLEY_COVERAGE_RESAMPLES, default 500).
func TestBootstrapCoverage(t *testing.T) {
	trials, b := 4, 100
	if v := os.Getenv("PARLEY_COVERAGE_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("PARLEY_COVERAGE_TRIALS=%q: %v", v, err)
		}
		trials, b = n, 500
	}
	if v := os.Getenv("PARLEY_COVERAGE_RESAMPLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("PARLEY_COVERAGE_RESAMPLES=%q: %v", v, err)
		}
		b = n
	}
	truth := coverageTruth{0.3, 0.1, 0.12, 0.3, 0.05, 0.25}
	rows, err := coverageStudy(truth, 15, 5, trials, b, 28)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(rows))
	for k := range rows {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("%d tournaments × %d resamples", trials, b)
	// The resamples are centred on the estimate: a pairing drawn twice is
	// one pairing (TestMoMCopiesArePairings); counted as two, the
	// requester share's resamples averaged 0.8 bootstrap s.d. above it.
	for _, c := range []string{CompHolder, CompRequester, CompMatchup, CompResidual} {
		if r := rows[c]; math.Abs(r.shift) > 0.25*r.meanBootSD {
			t.Errorf("%s share: the bootstrap mean is %+.4f from the estimate (bootstrap s.d. %.4f)", c, r.shift, r.meanBootSD)
		}
	}
	for _, c := range names {
		r := rows[c]
		t.Logf("%-10s true %.4f (cohort's %.4f)  estimate mean %.4f sd %.4f  bootstrap sd %.4f  width %.4f", c, r.truth, r.cohortTruth, r.meanEst, r.sdEst, r.meanBootSD, r.meanWidth)
		t.Logf("%-10s against the cohort's: error mean %+.4f sd %.4f; bootstrap mean − estimate %+.4f", "", r.errMean, r.errSD, r.shift)
		for _, tg := range targets {
			for _, k := range intervalKinds {
				key := tg + " " + k
				t.Logf("    %-21s cover %.3f  (truth below %.3f, above %.3f)", key, r.cover[key], r.below[key], r.above[key])
			}
		}
	}
}
