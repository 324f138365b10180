package harness

import (
	"math/rand/v2"
	"slices"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// EvalSplitName is the curriculum split held out for evaluation.
const EvalSplitName = "eval"

// EvalSplit returns the prompts of the eval split when any prompt is in it,
// else every prompt (a curriculum without splits, such as the bundled
// samples). The input is not modified.
func EvalSplit(prompts []dataset.Prompt) []dataset.Prompt {
	var out []dataset.Prompt
	for _, p := range prompts {
		if p.Split == EvalSplitName {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return prompts
	}
	return out
}

// SamplePrompts returns n prompts drawn without repeats, in their original
// order; the draw depends only on (prompts, n, seed). With n ≤ 0 or n ≥
// len(prompts) it returns prompts.
func SamplePrompts(prompts []dataset.Prompt, n int, seed int64) []dataset.Prompt {
	if n <= 0 || n >= len(prompts) {
		return prompts
	}
	rng := rand.New(rand.NewPCG(uint64(rollout.DeriveSeed(seed, "eval/prompts", int64(n))), 0x6576616c))
	idx := rng.Perm(len(prompts))[:n]
	slices.Sort(idx)
	out := make([]dataset.Prompt, n)
	for i, k := range idx {
		out[i] = prompts[k]
	}
	return out
}
