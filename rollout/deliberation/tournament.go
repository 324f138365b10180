package deliberation

import (
	"fmt"
	"sort"
	"strings"

	"github.com/parleyhq/parley/rollout"
)

// Tournament makes the game a round robin between agents in seats A and
// B (parley league crossplay plays a run's checkpoints so). The game has
// no scorer of its own: the judge that scores its games is the caller's
// (a run's judge), and both seats earn its score. The report is the mean
// score and agreement rate per pairing.
var Tournament = &rollout.Tournament{
	Seats:       [2]string{"A", "B"},
	Cooperative: true,
	Report:      tournamentReport,
}

// Pairing is one ordered pairing of a tournament's report.
type Pairing struct {
	A, B      string
	Games     int
	Score     float64
	Agreement float64
}

// tournamentReport is the mean judged score and agreement rate of each
// ordered pairing.
func tournamentReport(in rollout.TournamentReport) (string, any, error) {
	cells := map[[2]string]*Pairing{}
	failed := 0
	for _, g := range in.Games {
		if g.Failed || g.Rollout == nil || !g.Rollout.Judged {
			failed++
			continue
		}
		c := cells[g.Seats]
		if c == nil {
			c = &Pairing{A: g.Seats[0], B: g.Seats[1]}
			cells[g.Seats] = c
		}
		c.Games++
		c.Score += float64(g.Rollout.Score)
		if g.Rollout.Agreed {
			c.Agreement++
		}
	}
	out := make([]Pairing, 0, len(cells))
	for _, c := range cells {
		c.Score /= float64(c.Games)
		c.Agreement /= float64(c.Games)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].A < out[j].A || out[i].A == out[j].A && out[i].B < out[j].B })
	var b strings.Builder
	fmt.Fprintf(&b, "# Deliberation tournament: %s\n\n%d agents, %d games scheduled, %d recorded, %d failed or unjudged.\n\n",
		in.Name, len(in.Agents), in.Scheduled, len(in.Games), failed)
	b.WriteString("| A | B | games | mean score | agreement |\n|---|---|---|---|---|\n")
	for _, c := range out {
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %.2f |\n", c.A, c.B, c.Games, c.Score, c.Agreement)
	}
	return b.String(), out, nil
}
