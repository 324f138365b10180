package deliberation

import (
	"math"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// TestPairingMeans: the tournament report is the mean judged score and
// agreement rate of each ordered pairing, sorted; failed and unjudged
// games are counted apart and enter no mean.
func TestPairingMeans(t *testing.T) {
	game := func(a, b string, score float32, agreed, judged, failed bool) rollout.TournamentGame {
		return rollout.TournamentGame{Seats: [2]string{a, b}, Failed: failed,
			Rollout: &dataset.Rollout{Score: score, Agreed: agreed, Judged: judged}}
	}
	in := rollout.TournamentReport{Name: "t", Scheduled: 6,
		Agents: []rollout.TournamentAgent{{Name: "x"}, {Name: "y"}},
		Games: []rollout.TournamentGame{
			game("y", "x", 2, false, true, false),
			game("x", "y", 4, true, true, false),
			game("x", "y", 3, false, true, false),
			game("x", "y", 5, true, false, false), // unjudged
			game("y", "x", 1, true, true, true),   // failed
			{Seats: [2]string{"x", "y"}, Failed: true},
		}}
	md, analysis, err := Tournament.Report(in)
	if err != nil {
		t.Fatal(err)
	}
	got := analysis.([]Pairing)
	want := []Pairing{{A: "x", B: "y", Games: 2, Score: 3.5, Agreement: 0.5}, {A: "y", B: "x", Games: 1, Score: 2, Agreement: 0}}
	if len(got) != len(want) {
		t.Fatalf("pairings %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.A != w.A || g.B != w.B || g.Games != w.Games || math.Abs(g.Score-w.Score) > 1e-9 || math.Abs(g.Agreement-w.Agreement) > 1e-9 {
			t.Errorf("pairing %d = %+v, want %+v", i, g, w)
		}
	}
	for _, line := range []string{"2 agents, 6 games scheduled, 6 recorded, 3 failed or unjudged.", "| x | y | 2 | 3.500 | 0.50 |", "| y | x | 1 | 2.000 | 0.00 |"} {
		if !strings.Contains(md, line) {
			t.Errorf("the report lacks %q:\n%s", line, md)
		}
	}
	if !Tournament.Cooperative || Tournament.Seats != [2]string{"A", "B"} {
		t.Errorf("tournament seats %v cooperative %v, want A, B and cooperative", Tournament.Seats, Tournament.Cooperative)
	}
}
