package grpo

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// benchRollouts is a step of the paper's scale: 64 prompts × 8 rollouts,
// each two dialogue sequences and a final one of seqLen tokens.
func benchRollouts(seqLen int) []dataset.Rollout {
	rng := rand.New(rand.NewPCG(3, 4))
	var rs []dataset.Rollout
	for g := range 64 {
		for i := range 8 {
			r := dataset.Rollout{GroupID: fmt.Sprintf("g%d", g), RolloutID: fmt.Sprintf("g%d-%d", g, i), Judged: true}
			reward := float32(1 + rng.IntN(5))
			for k, role := range []string{"A", "B", "final"} {
				r.Roles = append(r.Roles, dataset.RoleOutcome{Role: role, Trained: true, Scored: true, Score: reward, Reward: reward})
				kind := dataset.KindDialogue
				if k == 2 {
					kind = dataset.KindFinal
				}
				s := dataset.Sequence{Role: role, Kind: kind, InputIDs: make([]int32, seqLen),
					LossMask: make([]int8, seqLen), Logprobs: make([]float32, seqLen)}
				for t := seqLen / 4; t < seqLen; t++ {
					s.LossMask[t], s.Logprobs[t] = 1, -0.5
				}
				r.Sequences = append(r.Sequences, s)
			}
			rs = append(rs, r)
		}
	}
	return rs
}

func BenchmarkComputeAdvantages(b *testing.B) {
	rs := benchRollouts(16)
	for b.Loop() {
		if _, _, err := ComputeAdvantages(rs, AdvantageOptions{Mode: ModeGroup}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildBatch(b *testing.B) {
	rs := benchRollouts(2048)
	kept, _, err := ComputeAdvantages(rs, AdvantageOptions{Mode: ModeGroup}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := BuildBatch(kept, BatchOptions{Mask: "dialogue"}); err != nil {
			b.Fatal(err)
		}
	}
}
