package roundrobin

import (
	"math/rand/v2"
	"testing"
)

// Seed 001's scale: 15 agents, 5 rounds per framing, 1,050 games.
func paperCells() []Cell {
	return synth(rand.New(rand.NewPCG(1, 2)), 15, 5, true, 0.3, 0.1, 0.12, 0.3, 0.05, 0.25)
}

func BenchmarkMoM(b *testing.B) {
	cells := paperCells()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MoM(cells); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFitMixed(b *testing.B) {
	cells := paperCells()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FitMixed(cells); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBootstrapMoM2000 is table 3's interval: 2,000 resamples.
func BenchmarkBootstrapMoM2000(b *testing.B) {
	cells := paperCells()
	for b.Loop() {
		Bootstrap(cells, 2000, 1, func(cs []Cell) ([]float64, error) {
			bg, err := MoM(cs)
			return []float64{bg.Share(CompHolder)}, err
		})
	}
}
