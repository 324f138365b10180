package league

import (
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// BenchmarkLeagueStep is the league's bookkeeping of one training step at
// 100 members (3 frozen, 97 snapshots): the snapshots joining, 32 groups
// drawn by pfsp, the rating period over their 256 games (8 a group) and
// the atomic write of league/step-N.json (fsync included). It excludes
// adapter loads (network).
func BenchmarkLeagueStep(b *testing.B) {
	b.Run("draw+rate+write", func(b *testing.B) { benchStep(b, true) })
	b.Run("draw+rate", func(b *testing.B) { benchStep(b, false) })
}

func benchStep(b *testing.B, write bool) {
	dir := dataset.RunDir(b.TempDir())
	o := Options{Draw: DrawPFSP}
	s := New("bench", []string{"requester"})
	r := s.Role("requester")
	r.Join(1, 96, 3, o)
	if len(r.Members) != 100 {
		b.Fatalf("%d members", len(r.Members))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step := 100 + i
		r.Join(step, 96, 3, o)
		draws, err := r.Draw(o, 1, step, 32)
		if err != nil {
			b.Fatal(err)
		}
		r.Count(draws)
		games := make([]Game, 0, 256)
		for g, id := range draws {
			for k := 0; k < 8; k++ {
				games = append(games, Game{Member: id, Score: float64((g + k) % 2)})
			}
		}
		r.Rate(step, 96, games, o)
		s.Step = step
		if !write {
			continue
		}
		if err := Save(dir.LeaguePath(step), s); err != nil {
			b.Fatal(err)
		}
	}
}
