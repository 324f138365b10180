// Package curriculum is the adaptive prompt sampler of a training run
// (curriculum.sampler: adaptive): it keeps, per prompt row, the reward
// mean and spread of its recent groups, draws the rows with signal left
// more often (weighted by that spread, with an exploration floor), and
// retires for a cool-down the rows whose groups keep coming back with
// equal rewards (solved, or hopeless) — while keeping the categories'
// mix. Its State is carried step to step in the run directory.
package curriculum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/parleyhq/parley/dataset"
)

// Defaults of Options.
const (
	DefaultFloor       = 0.1
	DefaultWindow      = 4
	DefaultRetireAfter = 2
	DefaultCooldown    = 10
)

// Options tune the sampler; a zero field takes its default.
type Options struct {
	// Floor is the weight every eligible row keeps besides its spread (a
	// row never seen weighs 1 + Floor, the most).
	Floor float64
	// Window is how many of a row's latest groups its statistics keep.
	Window int
	// RetireAfter is how many groups in a row of equal rewards retire a
	// prompt row; Cooldown the steps it then rests.
	RetireAfter int
	Cooldown    int
}

func (o Options) withDefaults() Options {
	if o.Floor <= 0 {
		o.Floor = DefaultFloor
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.RetireAfter <= 0 {
		o.RetireAfter = DefaultRetireAfter
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	return o
}

// Prompt is one prompt row's statistics.
type Prompt struct {
	// Groups counts the row's groups seen.
	Groups int `json:"groups"`
	// Means and Spreads are the reward mean and spread (population std)
	// of its latest groups, oldest first.
	Means   []float64 `json:"means"`
	Spreads []float64 `json:"spreads"`
	// Flat counts its latest groups in a row whose rewards were equal.
	Flat int `json:"flat,omitempty"`
	// RetiredUntil is the first step it may be drawn again, and Retired
	// why it rests ("solved": its reward at least the run's mean;
	// "hopeless": below), while the step is before RetiredUntil.
	RetiredUntil int    `json:"retired_until,omitempty"`
	Retired      string `json:"retired,omitempty"`
}

// State is the sampler's memory, by prompt id.
type State struct {
	Prompts map[string]*Prompt `json:"prompts"`
	// Mean is the mean reward of every group seen (the solved/hopeless
	// line), over Seen groups.
	Mean float64 `json:"mean"`
	Seen int     `json:"seen"`
}

// New returns an empty State.
func New() *State { return &State{Prompts: map[string]*Prompt{}} }

// Clone returns a deep copy of s (nil: a new State).
func (s *State) Clone() *State {
	out := New()
	if s == nil {
		return out
	}
	out.Mean, out.Seen = s.Mean, s.Seen
	for id, p := range s.Prompts {
		c := *p
		c.Means, c.Spreads = slices.Clone(p.Means), slices.Clone(p.Spreads)
		out.Prompts[id] = &c
	}
	return out
}

// Observe records one group of prompt id, scored rewards at step: its
// mean and spread, and, after RetireAfter groups in a row of equal
// rewards, the row's retirement until step + 1 + Cooldown. A group with no
// reward (every rollout failed) is not recorded.
func (s *State) Observe(step int, id string, rewards []float64, opts Options) {
	if len(rewards) == 0 {
		return
	}
	opts = opts.withDefaults()
	mean, spread := meanStd(rewards)
	p := s.Prompts[id]
	if p == nil {
		p = &Prompt{}
		s.Prompts[id] = p
	}
	p.Groups++
	p.Means = append(p.Means, mean)
	p.Spreads = append(p.Spreads, spread)
	if n := len(p.Means); n > opts.Window {
		p.Means, p.Spreads = p.Means[n-opts.Window:], p.Spreads[n-opts.Window:]
	}
	s.Seen++
	s.Mean += (mean - s.Mean) / float64(s.Seen)
	if spread > 1e-9 {
		p.Flat = 0
		return
	}
	p.Flat++
	if p.Flat >= opts.RetireAfter {
		p.Flat = 0
		p.RetiredUntil = step + 1 + opts.Cooldown
		p.Retired = "hopeless"
		if mean >= s.Mean {
			p.Retired = "solved"
		}
	}
}

// Retired counts the rows resting at step, by reason.
func (s *State) Retired(step int) map[string]int {
	out := map[string]int{}
	for _, p := range s.Prompts {
		if step < p.RetiredUntil {
			out[p.Retired]++
		}
	}
	return out
}

// weight is row id's draw weight at step: 0 while retired, 1 + floor when
// never seen, else floor plus its mean spread over the largest any row has.
func (s *State) weight(id string, step int, floor, top float64) float64 {
	p := s.Prompts[id]
	switch {
	case p == nil || len(p.Spreads) == 0:
		return 1 + floor
	case step < p.RetiredUntil:
		return 0
	case top <= 0:
		return floor
	}
	return floor + mean(p.Spreads)/top
}

// Draw draws n prompt rows for step, as rollout.SelectPrompts does
// (categories by mix, the draw a function of seed and step), but within a
// category by weight, without repeats while the category has rows left.
// A category whose rows all rest ends their rest early; ended names those
// categories, so the caller can warn.
func (s *State) Draw(prompts []dataset.Prompt, mix map[string]float64, n int, seed uint64, step int, opts Options) (out []dataset.Prompt, ended []string) {
	if len(prompts) == 0 || n <= 0 {
		return nil, nil
	}
	opts = opts.withDefaults()
	cd := dataset.NewCategoryDraw(prompts, mix)
	top := 0.0
	for _, p := range s.Prompts {
		if len(p.Spreads) > 0 {
			top = max(top, mean(p.Spreads))
		}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(step)))
	used := map[int]bool{}
	for len(out) < n {
		cat := cd.Pick(rng.Float64())
		rows := cd.Rows[cat]
		w := make([]float64, len(rows))
		var sum float64
		for k, i := range rows {
			if !used[i] {
				w[k] = s.weight(prompts[i].ID, step, opts.Floor, top)
				sum += w[k]
			}
		}
		if sum == 0 {
			// The rows left this step rest, or none is left: when some row
			// of the category may be drawn, draw again from the whole
			// category; when every one rests, their rest ends now.
			active := false
			for _, i := range rows {
				active = active || s.weight(prompts[i].ID, step, opts.Floor, top) > 0
			}
			if active {
				for _, i := range rows {
					delete(used, i)
				}
				continue
			}
			for _, i := range rows {
				if p := s.Prompts[prompts[i].ID]; p != nil && step < p.RetiredUntil {
					p.RetiredUntil, p.Retired = step, ""
				}
			}
			ended = append(ended, cat)
			continue
		}
		y := rng.Float64() * sum
		k := -1
		for j := range rows {
			if w[j] == 0 {
				continue
			}
			k = j
			if y < w[j] {
				break
			}
			y -= w[j]
		}
		used[rows[k]] = true
		out = append(out, prompts[rows[k]])
	}
	return out, ended
}

// Check reports options out of range, naming the key under prefix.
func (o Options) Check(prefix string) error {
	if o.Floor < 0 || math.IsNaN(o.Floor) || o.Window < 0 || o.RetireAfter < 0 || o.Cooldown < 0 {
		return fmt.Errorf("%s: floor, window, retire_after and cooldown must not be negative", prefix)
	}
	return nil
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func meanStd(xs []float64) (m, sd float64) {
	m = mean(xs)
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)))
}
