package scenario

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// Difficulty is the range a generated scenario must fall in, checked by
// enumerating its packages.
type Difficulty struct {
	// FeasibleMin and FeasibleMax bound the number of honest-feasible
	// packages.
	FeasibleMin int `json:"feasible_min" yaml:"feasible_min"`
	FeasibleMax int `json:"feasible_max" yaml:"feasible_max"`
	// LossMax bounds, for every honest party, the loss from its ideal
	// total to its best feasible total.
	LossMax int `json:"loss_max" yaml:"loss_max"`
}

// DefaultDifficulty is the stated range of each scenario type: the
// honest-feasible counts of the seed's table 5 (8 to 10 packages of 1,024
// for 2HB+2G, 7 to 8 for 1HB+3G), and no honest party more than 45 points
// (of 100) from its ideal in its best feasible package.
func DefaultDifficulty(typ string) Difficulty {
	if typ == Type1HB3G {
		return Difficulty{FeasibleMin: 7, FeasibleMax: 8, LossMax: 45}
	}
	return Difficulty{FeasibleMin: 8, FeasibleMax: 10, LossMax: 45}
}

// Check reports whether properties pr fall in d.
func (d Difficulty) Check(pr Properties) error {
	if pr.Feasible < d.FeasibleMin || pr.Feasible > d.FeasibleMax {
		return fmt.Errorf("scenario %q: %d honest-feasible packages, outside the stated range [%d, %d]", pr.ID, pr.Feasible, d.FeasibleMin, d.FeasibleMax)
	}
	roles := make([]string, 0, len(pr.UtilityLoss))
	for r := range pr.UtilityLoss {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		if l := pr.UtilityLoss[r]; l > d.LossMax {
			return fmt.Errorf("scenario %q: party %s loses %d points from its ideal to its best feasible package, above the stated %d", pr.ID, r, l, d.LossMax)
		}
	}
	return nil
}

func (d Difficulty) validate() error {
	if d.FeasibleMin < 1 || d.FeasibleMax < d.FeasibleMin {
		return fmt.Errorf("feasible range [%d, %d]: want 1 ≤ min ≤ max", d.FeasibleMin, d.FeasibleMax)
	}
	if d.LossMax < 0 {
		return fmt.Errorf("loss_max %d is negative", d.LossMax)
	}
	return nil
}

// Target is the structure a generated set must have: the set-level rows
// of the seed's table 5 (the per-scenario range of honest-feasible
// packages is the Difficulty), each with the tolerance it must be met
// within.
type Target struct {
	// FeasibleMean is the mean number of honest-feasible packages.
	FeasibleMean float64 `json:"feasible_mean"`
	// ConstrainedHB, ConstrainedG and ConstrainedTie are the shares
	// (percent) of the set's honest-feasible packages whose most
	// constrained party is a hard bargainer, a general agent, or both
	// (Constrained).
	ConstrainedHB  float64 `json:"constrained_hb_pct"`
	ConstrainedG   float64 `json:"constrained_g_pct"`
	ConstrainedTie float64 `json:"constrained_tie_pct"`
	// ChangesHB and ChangesG are the role means of the option changes from
	// a party's ideal to its nearest honest-feasible package.
	ChangesHB float64 `json:"option_changes_hb"`
	ChangesG  float64 `json:"option_changes_g"`
	// Tolerance is how far each row may be from its target.
	Tolerance Tolerance `json:"tolerance"`
}

// Tolerance is how far a set's table 5 rows may be from a Target.
type Tolerance struct {
	// FeasibleMean in packages, Constrained in percentage points (each of
	// the three shares), Changes in option changes (each role mean).
	FeasibleMean float64 `json:"feasible_mean"`
	Constrained  float64 `json:"constrained_pct"`
	Changes      float64 `json:"option_changes"`
}

// DefaultTolerance is the tolerance of the shipped sets: a tenth of a
// package on the feasible mean (two steps of a 20-scenario mean), two
// points on each most-constrained share and 0.05 option changes on each
// role mean (two changes among the 40 parties of a kind of a 2HB+2G set).
var DefaultTolerance = Tolerance{FeasibleMean: 0.1, Constrained: 2, Changes: 0.05}

// PaperTarget is the structure of the seed's scenario sets of a type (its
// table 5), with DefaultTolerance.
func PaperTarget(typ string) Target {
	if typ == Type1HB3G {
		return Target{FeasibleMean: 7.50, ConstrainedHB: 26.7, ConstrainedG: 73.3, ConstrainedTie: 0, ChangesHB: 2.00, ChangesG: 1.00, Tolerance: DefaultTolerance}
	}
	return Target{FeasibleMean: 9.45, ConstrainedHB: 79.9, ConstrainedG: 13.2, ConstrainedTie: 6.9, ChangesHB: 1.33, ChangesG: 0.05, Tolerance: DefaultTolerance}
}

// rows are the target's rows: name, the set's value, the target, and the
// tolerance: the stated one, or one step of what a set of sp's size can
// express when that is wider (a set of 3 scenarios has feasible means
// 1/3 apart).
func (t Target) rows(sp SetProperties) []targetRow {
	step := func(n int) float64 {
		if n <= 0 {
			return 0
		}
		return 1 / float64(n)
	}
	nHB, nG := 0, 0
	if _, kinds, err := RolesOf(sp.Type); err == nil {
		for _, k := range kinds {
			switch k {
			case KindHardBargainer:
				nHB += sp.Scenarios
			case KindGeneral:
				nG += sp.Scenarios
			}
		}
	}
	pkgs := sp.Constrained.HB + sp.Constrained.G + sp.Constrained.Tie
	tol := t.Tolerance
	return []targetRow{
		{"honest-feasible packages, mean", sp.FeasibleMean, t.FeasibleMean, max(tol.FeasibleMean, step(sp.Scenarios))},
		{"most constrained HB (%)", sp.ConstrainedHB, t.ConstrainedHB, max(tol.Constrained, 100*step(pkgs))},
		{"most constrained G (%)", sp.ConstrainedG, t.ConstrainedG, max(tol.Constrained, 100*step(pkgs))},
		{"most constrained tie (%)", sp.ConstrainedTie, t.ConstrainedTie, max(tol.Constrained, 100*step(pkgs))},
		{"option changes HB", sp.ChangesHB, t.ChangesHB, max(tol.Changes, step(nHB))},
		{"option changes G", sp.ChangesG, t.ChangesG, max(tol.Changes, step(nG))},
	}
}

type targetRow struct {
	name              string
	got, want, within float64
}

// Check reports every row of sp that is further from t than its
// tolerance (see rows).
func (t Target) Check(sp SetProperties) error {
	var off []string
	for _, r := range t.rows(sp) {
		if math.Abs(r.got-r.want) > r.within+1e-9 {
			off = append(off, fmt.Sprintf("%s %.2f, target %.2f ± %.2f", r.name, r.got, r.want, r.within))
		}
	}
	if len(off) > 0 {
		return fmt.Errorf("set of %d %s scenarios misses its target: %s", sp.Scenarios, sp.Type, strings.Join(off, "; "))
	}
	return nil
}

// distance is how far the set is from t, what the set selection
// minimizes: each row's excess over its tolerance, squared and weighted
// heavily, plus its deviation in units of its tolerance, squared, so that
// meeting every tolerance comes first and closeness second.
func (t Target) distance(sp SetProperties) float64 {
	d := 0.0
	for _, r := range t.rows(sp) {
		dev := math.Abs(r.got-r.want) / max(r.within, 1e-6)
		d += dev * dev
		if dev > 1 {
			d += 1000 * (dev - 1) * (dev - 1)
		}
	}
	return d
}

func (t Target) validate(d Difficulty) error {
	if t.FeasibleMean < float64(d.FeasibleMin) || t.FeasibleMean > float64(d.FeasibleMax) {
		return fmt.Errorf("target feasible mean %.2f is outside the feasible range [%d, %d]", t.FeasibleMean, d.FeasibleMin, d.FeasibleMax)
	}
	if s := t.ConstrainedHB + t.ConstrainedG + t.ConstrainedTie; math.Abs(s-100) > 0.5 {
		return fmt.Errorf("target most-constrained shares sum to %.1f%%, want 100%%", s)
	}
	if t.ChangesHB < 0 || t.ChangesG < 0 || t.ChangesHB > 5 || t.ChangesG > 5 {
		return fmt.Errorf("target option changes %.2f / %.2f: want 0 to 5 (five issues)", t.ChangesHB, t.ChangesG)
	}
	tol := t.Tolerance
	if tol.FeasibleMean <= 0 || tol.Constrained <= 0 || tol.Changes <= 0 {
		return fmt.Errorf("tolerance %+v: want every entry positive", tol)
	}
	return nil
}

// GenerateOptions configure Generate.
type GenerateOptions struct {
	// Type is Type2HB2G or Type1HB3G.
	Type string
	// N is the number of scenarios.
	N int
	// Seed seeds the set: the same options give the same scenarios.
	Seed int64
	// IDPrefix starts every id ("<prefix>-007"); "" is the type.
	IDPrefix string
	// Difficulty is the range every scenario must fall in; the zero value
	// is DefaultDifficulty(Type).
	Difficulty Difficulty
	// Target is the structure the set must have; nil is PaperTarget(Type).
	Target *Target
	// NoTarget draws each scenario alone, with no set target (the first
	// draw of each that falls in the Difficulty range).
	NoTarget bool
	// Pool is the number of candidates drawn for each scenario, among
	// which the set is chosen (default 128).
	Pool int
	// MaxAttempts bounds the draws per scenario (default 50 × Pool).
	MaxAttempts int
}

// Generate draws a set of scenarios with the structure of the seed's
// table 5 (Target). For each scenario of the set it draws Pool
// candidates: a theme; a compromise package c; for each honest party a
// number of issues on which its best option is not c's (drawn around the
// target's option changes for its kind), and scores (issue weights summing
// to 100, the best option of each issue worth its weight, c's option the
// best on the other issues); each honest party's margin at c (how far c
// lies above its BATNA: a share of a scale found by bisection, so that the
// number of honest-feasible packages falls in the Difficulty range; the
// shares, drawn per party, decide who is most constrained); and an
// adversary whose BATNA lies above its best package. Every candidate is
// validated by enumeration and checked against the Difficulty range. Then
// one candidate per scenario is chosen, by coordinate descent from the
// first candidates, to bring the set's table 5 closest to the target;
// the set must meet every row within its tolerance.
func Generate(opts GenerateOptions) ([]*Scenario, error) {
	roles, kinds, err := RolesOf(opts.Type)
	if err != nil {
		return nil, fmt.Errorf("scenario.Generate: %w", err)
	}
	if opts.N <= 0 {
		return nil, fmt.Errorf("scenario.Generate: n %d must be positive", opts.N)
	}
	if opts.Difficulty == (Difficulty{}) {
		opts.Difficulty = DefaultDifficulty(opts.Type)
	}
	if err := opts.Difficulty.validate(); err != nil {
		return nil, fmt.Errorf("scenario.Generate: %w", err)
	}
	target := PaperTarget(opts.Type)
	if opts.Target != nil {
		target = *opts.Target
	}
	if !opts.NoTarget {
		if err := target.validate(opts.Difficulty); err != nil {
			return nil, fmt.Errorf("scenario.Generate: %w", err)
		}
	}
	if opts.Pool <= 0 {
		opts.Pool = 128
	}
	if opts.NoTarget {
		opts.Pool = 1
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 50 * opts.Pool
	}
	if opts.IDPrefix == "" {
		opts.IDPrefix = opts.Type
	}
	pools := make([][]candidate, opts.N)
	for n := range pools {
		id := fmt.Sprintf("%s-%03d", opts.IDPrefix, n+1)
		pools[n], err = drawPool(opts, target, id, n, roles, kinds)
		if err != nil {
			return nil, fmt.Errorf("scenario.Generate: %w", err)
		}
	}
	pick := choose(pools, target)
	out := make([]*Scenario, opts.N)
	for n, k := range pick {
		out[n] = pools[n][k].s
	}
	if !opts.NoTarget {
		if err := target.Check(Summarize(out)); err != nil {
			return nil, fmt.Errorf("scenario.Generate: %w (draw a larger pool, or change the seed)", err)
		}
	}
	return out, nil
}

// candidate is one drawn scenario and its properties.
type candidate struct {
	s  *Scenario
	pr Properties
}

// drawPool draws candidates for scenario n of a set until opts.Pool of
// them fall in the Difficulty range.
func drawPool(opts GenerateOptions, target Target, id string, n int, roles, kinds []string) ([]candidate, error) {
	var pool []candidate
	var last error
	for attempt := 0; attempt < opts.MaxAttempts && len(pool) < opts.Pool; attempt++ {
		seed := opts.Seed*1_000_003 + int64(n)*1009 + int64(attempt)
		s, err := drawScenario(seed, id, opts.Type, roles, kinds, target, opts.Difficulty)
		if err != nil {
			last = err
			continue
		}
		if err := s.Validate(); err != nil {
			last = err
			continue
		}
		pr := Measure(s)
		if err := opts.Difficulty.Check(pr); err != nil {
			last = err
			continue
		}
		pool = append(pool, candidate{s: s, pr: pr})
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("scenario %s: no draw in %d attempts fell in the range (last: %w)", id, opts.MaxAttempts, last)
	}
	return pool, nil
}

// drawScenario draws one candidate from its seed (see Generate).
func drawScenario(seed int64, id, typ string, roles, kinds []string, target Target, d Difficulty) (*Scenario, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x73636e))
	th := themes[rng.IntN(len(themes))]
	s := &Scenario{ID: id, Type: typ, Title: th.title, Description: th.description, Seed: seed}
	for i, is := range th.issues {
		s.Issues = append(s.Issues, Issue{ID: string(rune('A' + i)), Name: is.name, Options: slices.Clone(is.options[:])})
	}
	const options = 4
	compromise := make([]int, len(s.Issues))
	for i := range compromise {
		compromise[i] = rng.IntN(options)
	}
	who := rng.Perm(len(th.stakeholders))
	for j, role := range roles {
		st := th.stakeholders[who[j]]
		p := Party{Role: role, Kind: kinds[j], Name: st[0], Description: st[1]}
		switch kinds[j] {
		case KindAdversary:
			p.Scores = drawScores(rng, len(s.Issues), options, nil)
		default:
			mean := target.ChangesG
			if kinds[j] == KindHardBargainer {
				mean = target.ChangesHB
			}
			p.Scores = drawScores(rng, len(s.Issues), options, plant(rng, compromise, drawChanges(rng, mean, len(s.Issues)), options))
		}
		s.Parties = append(s.Parties, p)
	}
	if err := fitBATNAs(rng, s, compromise, d); err != nil {
		return nil, fmt.Errorf("scenario %s (seed %d): %w", id, seed, err)
	}
	return s, nil
}

// drawChanges draws how many issues a party's ideal departs from the
// compromise on: ⌊mean⌋ or ⌈mean⌉ so that its expectation is mean, and
// one more or one fewer in a quarter of the draws, so that the pool holds
// both sides of the target.
func drawChanges(rng *rand.Rand, mean float64, issues int) int {
	k := int(math.Floor(mean))
	if rng.Float64() < mean-float64(k) {
		k++
	}
	if rng.Float64() < 0.25 {
		k += 2*rng.IntN(2) - 1
	}
	return min(max(k, 0), issues)
}

// plant returns, per issue, the option a party's best score goes to: the
// compromise's option except on changes issues drawn at random, where it
// is another one.
func plant(rng *rand.Rand, compromise []int, changes, options int) []int {
	best := slices.Clone(compromise)
	for _, i := range rng.Perm(len(best))[:changes] {
		best[i] = (compromise[i] + 1 + rng.IntN(options-1)) % options
	}
	return best
}

// drawScores draws one party's table: issue weights of at least 5 summing
// to 100 (largest remainder), and per issue the weight for its best
// option, 0 for its worst, and two values between; best, when not nil,
// names the option of each issue that gets the weight (the others are
// shuffled, and none of them ties it).
func drawScores(rng *rand.Rand, issues, options int, best []int) [][]int {
	raw := make([]float64, issues)
	var sum float64
	for i := range raw {
		raw[i] = 0.3 + rng.Float64()
		sum += raw[i]
	}
	budget := 100 - 5*issues
	w := make([]int, issues)
	rem := make([]float64, issues)
	used := 0
	for i := range raw {
		x := raw[i] / sum * float64(budget)
		w[i] = int(x)
		rem[i] = x - float64(w[i])
		used += w[i]
	}
	order := make([]int, issues)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for k := 0; used < budget; k++ {
		w[order[k%issues]]++
		used++
	}
	table := make([][]int, issues)
	for i := range table {
		wi := w[i] + 5
		if best == nil {
			vals := []int{wi, 0}
			for len(vals) < options {
				vals = append(vals, rng.IntN(wi+1))
			}
			rng.Shuffle(len(vals), func(a, b int) { vals[a], vals[b] = vals[b], vals[a] })
			table[i] = vals
			continue
		}
		rest := []int{0}
		for len(rest) < options-1 {
			rest = append(rest, rng.IntN(wi))
		}
		rng.Shuffle(len(rest), func(a, b int) { rest[a], rest[b] = rest[b], rest[a] })
		row := make([]int, 0, options)
		for k := 0; k < options; k++ {
			if k == best[i] {
				row = append(row, wi)
				continue
			}
			row = append(row, rest[0])
			rest = rest[1:]
		}
		table[i] = row
	}
	return table
}

// fitBATNAs sets each honest party's BATNA to its utility for the
// compromise package minus its margin, a drawn share of a common scale
// (hard bargainers' shares drawn lower, so that they are more often the
// most constrained); the scale is found by bisection so that the number of
// honest-feasible packages falls in d's range. The adversary's BATNA lies
// above its best package.
func fitBATNAs(rng *rand.Rand, s *Scenario, compromise []int, d Difficulty) error {
	honest := s.Honest()
	share := make(map[int]float64, len(honest))
	for _, p := range honest {
		lo, hi := 0.3, 1.5
		if s.Parties[p].Kind == KindHardBargainer {
			lo, hi = 0.05, 0.8
		}
		share[p] = lo + (hi-lo)*rng.Float64()
	}
	set := func(t float64) int {
		for _, p := range honest {
			s.Parties[p].BATNA = max(s.Utility(p, compromise)-int(math.Round(t*share[p])), 0)
		}
		return CountFeasible(s, honest)
	}
	lo, hi := 0.0, 100.0
	ok := false
	for it := 0; it < 40; it++ {
		t := (lo + hi) / 2
		n := set(t)
		if n < d.FeasibleMin {
			lo = t
		} else if n > d.FeasibleMax {
			hi = t
		} else {
			ok = true
			break
		}
	}
	if !ok {
		return errors.New("no BATNA scale puts the honest-feasible count in range")
	}
	for i, p := range s.Parties {
		if !p.Honest() {
			s.Parties[i].BATNA = s.MaxUtility(i) + 5
		}
	}
	return nil
}

// choose picks one candidate per scenario to bring the set closest to the
// target: by coordinate descent (scenario by scenario, each replaced by
// the candidate that lowers the distance most, until a pass changes
// nothing) from several starts (every scenario at its k-th candidate),
// keeping the closest set.
func choose(pools [][]candidate, target Target) []int {
	var best []int
	bestD := math.Inf(1)
	for start := 0; start < 8; start++ {
		pick, d := descend(pools, target, start)
		if d < bestD-1e-12 {
			best, bestD = pick, d
		}
	}
	return best
}

// descend is one coordinate descent of choose, from the start-th
// candidate of every pool (its last, for a smaller pool).
func descend(pools [][]candidate, target Target, start int) ([]int, float64) {
	pick := make([]int, len(pools))
	var acc accum
	for n, pool := range pools {
		pick[n] = min(start, len(pool)-1)
		acc.add(pool[pick[n]].pr, pool[pick[n]].s, 1)
	}
	best := target.distance(acc.props())
	for pass := 0; pass < 100; pass++ {
		changed := false
		for n, pool := range pools {
			cur := pool[pick[n]]
			acc.add(cur.pr, cur.s, -1)
			bestK := pick[n]
			for k, c := range pool {
				acc.add(c.pr, c.s, 1)
				if d := target.distance(acc.props()); d < best-1e-12 {
					best, bestK = d, k
				}
				acc.add(c.pr, c.s, -1)
			}
			if bestK != pick[n] {
				changed = true
			}
			pick[n] = bestK
			acc.add(pool[bestK].pr, pool[bestK].s, 1)
		}
		if !changed {
			break
		}
	}
	return pick, best
}

// accum keeps the running sums of a set's table 5 rows, so that choose
// can swap one scenario without measuring the set again.
type accum struct {
	typ                 string
	scenarios, feasible int
	hb, g, tie          int
	changesHB, changesG int
	partiesHB, partiesG int
}

func (a *accum) add(pr Properties, s *Scenario, sign int) {
	a.typ = s.Type
	a.scenarios += sign
	a.feasible += sign * pr.Feasible
	a.hb += sign * pr.Constrained.HB
	a.g += sign * pr.Constrained.G
	a.tie += sign * pr.Constrained.Tie
	for _, p := range s.Parties {
		switch p.Kind {
		case KindHardBargainer:
			a.changesHB += sign * pr.OptionChanges[p.Role]
			a.partiesHB += sign
		case KindGeneral:
			a.changesG += sign * pr.OptionChanges[p.Role]
			a.partiesG += sign
		}
	}
}

// props are the rows choose compares with the target.
func (a *accum) props() SetProperties {
	sp := SetProperties{Type: a.typ, Scenarios: a.scenarios, Constrained: Constrained{HB: a.hb, G: a.g, Tie: a.tie}}
	if a.scenarios > 0 {
		sp.FeasibleMean = float64(a.feasible) / float64(a.scenarios)
	}
	if all := a.hb + a.g + a.tie; all > 0 {
		sp.ConstrainedHB = 100 * float64(a.hb) / float64(all)
		sp.ConstrainedG = 100 * float64(a.g) / float64(all)
		sp.ConstrainedTie = 100 * float64(a.tie) / float64(all)
	}
	if a.partiesHB > 0 {
		sp.ChangesHB = float64(a.changesHB) / float64(a.partiesHB)
	}
	if a.partiesG > 0 {
		sp.ChangesG = float64(a.changesG) / float64(a.partiesG)
	}
	return sp
}

// FixedSetSeed is the seed of the committed scenario sets
// (sets/<type>.jsonl, 20 scenarios per type: builtin:<type>).
const FixedSetSeed = 2026
