package scenario

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
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
	// MaxAttempts bounds the draws per scenario (default 200).
	MaxAttempts int
}

// Acceptance shares the generator starts from: a hard bargainer accepts
// about a third as many packages as a general agent.
const (
	acceptHB = 0.12
	acceptG  = 0.36
)

// Generate draws a set of scenarios: for each, a theme, scores for every
// party (issue weights summing to 100, the best option of each issue worth
// its weight), BATNAs that admit a top share of each honest party's
// packages (hard bargainers a smaller share), scaled until the number of
// honest-feasible packages falls in the stated range, and an adversary
// whose BATNA lies above its best package. Every scenario is validated by
// enumeration and checked against the difficulty range; a draw that
// misses the range is drawn again, up to MaxAttempts.
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
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 200
	}
	if opts.IDPrefix == "" {
		opts.IDPrefix = opts.Type
	}
	out := make([]*Scenario, 0, opts.N)
	for n := 0; n < opts.N; n++ {
		id := fmt.Sprintf("%s-%03d", opts.IDPrefix, n+1)
		s, err := generateOne(opts, id, n, roles, kinds)
		if err != nil {
			return nil, fmt.Errorf("scenario.Generate: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// generateOne draws scenario n of a set until one falls in the range.
func generateOne(opts GenerateOptions, id string, n int, roles, kinds []string) (*Scenario, error) {
	var last error
	for attempt := 0; attempt < opts.MaxAttempts; attempt++ {
		seed := opts.Seed*1_000_003 + int64(n)*1009 + int64(attempt)
		rng := rand.New(rand.NewPCG(uint64(seed), 0x73636e))
		s := draw(rng, id, opts.Type, roles, kinds)
		s.Seed = seed
		if err := fitBATNAs(s, opts.Difficulty); err != nil {
			last = err
			continue
		}
		if err := s.Validate(); err != nil {
			last = err
			continue
		}
		if err := opts.Difficulty.Check(Measure(s)); err != nil {
			last = err
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("scenario %s: no draw in %d attempts fell in the range (last: %w)", id, opts.MaxAttempts, last)
}

// draw makes a scenario of a random theme with random scores; BATNAs are
// set later.
func draw(rng *rand.Rand, id, typ string, roles, kinds []string) *Scenario {
	th := themes[rng.IntN(len(themes))]
	s := &Scenario{ID: id, Type: typ, Title: th.title, Description: th.description}
	for i, is := range th.issues {
		s.Issues = append(s.Issues, Issue{ID: string(rune('A' + i)), Name: is.name, Options: slices.Clone(is.options[:])})
	}
	who := rng.Perm(len(th.stakeholders))
	for j, role := range roles {
		st := th.stakeholders[who[j]]
		s.Parties = append(s.Parties, Party{Role: role, Kind: kinds[j], Name: st[0], Description: st[1], Scores: drawScores(rng, len(s.Issues), 4)})
	}
	return s
}

// drawScores draws one party's table: issue weights of at least 5 summing
// to 100 (largest remainder), and per issue the weight for its best
// option, 0 for its worst, and two values between.
func drawScores(rng *rand.Rand, issues, options int) [][]int {
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
		vals := []int{wi, 0}
		for len(vals) < options {
			vals = append(vals, rng.IntN(wi+1))
		}
		rng.Shuffle(len(vals), func(a, b int) { vals[a], vals[b] = vals[b], vals[a] })
		table[i] = vals
	}
	return table
}

// fitBATNAs sets each honest party's BATNA to the utility that admits its
// top share of packages (acceptHB or acceptG times a scale t), searching t
// by bisection until the honest-feasible count falls in d's range, and
// the adversary's above its best package.
func fitBATNAs(s *Scenario, d Difficulty) error {
	honest := s.Honest()
	sorted := make(map[int][]int, len(honest)) // party → its utilities, descending
	for _, p := range honest {
		us := make([]int, 0, s.Packages())
		walk(s, nil, func(pkg []int) { us = append(us, s.Utility(p, pkg)) })
		sort.Sort(sort.Reverse(sort.IntSlice(us)))
		sorted[p] = us
	}
	set := func(t float64) int {
		for _, p := range honest {
			share := acceptG * t
			if s.Parties[p].Kind == KindHardBargainer {
				share = acceptHB * t
			}
			us := sorted[p]
			k := min(max(int(share*float64(len(us))), 1), len(us)) - 1
			s.Parties[p].BATNA = us[k]
		}
		return CountFeasible(s, honest)
	}
	lo, hi := 0.0, 1/acceptG
	for it := 0; it < 40; it++ {
		t := (lo + hi) / 2
		n := set(t)
		switch {
		case n < d.FeasibleMin:
			lo = t
		case n > d.FeasibleMax:
			hi = t
		default:
			for i, p := range s.Parties {
				if !p.Honest() {
					s.Parties[i].BATNA = s.MaxUtility(i) + 5
				}
			}
			return nil
		}
	}
	return errors.New("no BATNA scale puts the honest-feasible count in range")
}

// FixedSetSeed is the seed of the committed scenario sets
// (sets/<type>.jsonl, 20 scenarios per type: builtin:<type>).
const FixedSetSeed = 2026
