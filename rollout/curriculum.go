package rollout

import (
	"math/rand/v2"
	"sort"

	"github.com/parleyhq/parley/dataset"
)

// SelectPrompts draws n prompt rows for a training step: categories by the
// mix weights (nil or empty: in proportion to the rows), then rows
// uniformly within the category, without repeats inside the step while the
// category has rows left. The draw depends only on (seed, step), so a
// resumed run samples exactly the rows it would have.
func SelectPrompts(prompts []dataset.Prompt, mix map[string]float64, n int, seed int64, step int) []dataset.Prompt {
	if len(prompts) == 0 || n <= 0 {
		return nil
	}
	byCat := map[string][]int{}
	for i, p := range prompts {
		byCat[p.Category] = append(byCat[p.Category], i)
	}
	cats := make([]string, 0, len(byCat))
	for c := range byCat {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	weights := make([]float64, len(cats))
	var total float64
	for i, c := range cats {
		w := float64(len(byCat[c]))
		if len(mix) > 0 {
			w = mix[c]
		}
		weights[i] = w
		total += w
	}
	if total <= 0 { // the mix names none of the file's categories
		for i, c := range cats {
			weights[i] = float64(len(byCat[c]))
			total += weights[i]
		}
	}
	rng := rand.New(rand.NewPCG(uint64(DeriveSeed(seed, "curriculum", int64(step))), 0x7061726c6579))
	perm := map[string][]int{}
	out := make([]dataset.Prompt, 0, n)
	for len(out) < n {
		x := rng.Float64() * total
		ci := 0
		for ci < len(cats)-1 && x >= weights[ci] {
			x -= weights[ci]
			ci++
		}
		c := cats[ci]
		if len(perm[c]) == 0 {
			idx := append([]int(nil), byCat[c]...)
			rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			perm[c] = idx
		}
		out = append(out, prompts[perm[c][0]])
		perm[c] = perm[c][1:]
	}
	return out
}
