package rollout

import (
	"math/rand/v2"

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
	cd := dataset.NewCategoryDraw(prompts, mix)
	rng := rand.New(rand.NewPCG(uint64(DeriveSeed(seed, "curriculum", int64(step))), 0x7061726c6579))
	perm := map[string][]int{}
	out := make([]dataset.Prompt, 0, n)
	for len(out) < n {
		c := cd.Pick(rng.Float64())
		if len(perm[c]) == 0 {
			idx := append([]int(nil), cd.Rows[c]...)
			rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			perm[c] = idx
		}
		out = append(out, prompts[perm[c][0]])
		perm[c] = perm[c][1:]
	}
	return out
}
