package generate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkIndexCheck measures a near-duplicate lookup against 10,000
// accepted prompts of 40 words drawn from a 2,000-word vocabulary.
func BenchmarkIndexCheck(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		w := make([]string, 40)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", rng.IntN(2000))
		}
		return strings.Join(w, " ") + "?"
	}
	x := NewIndex(DefaultNearDupThreshold)
	for range 10000 {
		x.Add(text())
	}
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = text()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.Check(queries[i%len(queries)])
	}
}
