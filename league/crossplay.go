package league

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/internal/fsutil"
)

// CrossGame is one cross-play game between two agents (checkpoints and
// frozen agents): Seats are the agents by the game's seats, Score the
// game's headline score (seed 001: the share the seat-1 requester got from
// the seat-0 holder), Seat0Score and Seat1Score the seats' own scores.
type CrossGame struct {
	Seats                  [2]string
	Score                  float64
	Seat0Score, Seat1Score float64
	Failed                 bool
}

// Worst is an agent's worst opponent in one seat: the one it fares worst
// against, and its own mean score there (an exploitability proxy).
type Worst struct {
	Opponent string  `json:"opponent"`
	Score    float64 `json:"score"`
}

// CrossPlay is the analysis of a cross-play tournament.
type CrossPlay struct {
	Agents []string `json:"agents"`
	// Seats are the game's seats; Rows the seat-0 agents sorted as seed
	// 001's figure 1 sorts holders (lowest mean headline score first: the
	// most robust), Cols the seat-1 agents sorted as its requesters
	// (highest first: the best at extracting).
	Seats [2]string `json:"seats"`
	Rows  []string  `json:"rows"`
	Cols  []string  `json:"cols"`
	// Matrix[row][col] is the mean headline score of the ordered pairing
	// (NaN, written null, where none was played).
	Matrix [][]float64 `json:"-"`
	// Worst is each agent's worst opponent in each seat, by seat name.
	Worst map[string]map[string]Worst `json:"worst"`
	// Cycles are the non-transitive triples a > b > c > a, a beating b
	// when its mean own score against b over both seats exceeds b's.
	Cycles [][3]string `json:"cycles"`
	Games  int         `json:"games"`
	Failed int         `json:"failed"`
	// Cooperative reports a game whose seats earn one score (seed 000's
	// deliberation): rows and columns are then both sorted best partner
	// first, the worst opponent is the worst partner, and there are no
	// cycles to look for (no seat beats the other).
	Cooperative bool `json:"cooperative"`
}

// AnalyseCrossPlay builds the matrix, the worst-case opponents and the
// 3-cycles of games among agents; cooperative games are sorted and read
// as CrossPlay.Cooperative says.
func AnalyseCrossPlay(agents []string, seats [2]string, games []CrossGame, cooperative bool) CrossPlay {
	cp := CrossPlay{Agents: agents, Seats: seats, Worst: map[string]map[string]Worst{}, Cooperative: cooperative}
	type acc struct{ sum, n, s0, s1 float64 }
	cell := map[[2]string]*acc{}
	mean0, mean1 := map[string]*acc{}, map[string]*acc{}
	for _, g := range games {
		if g.Failed {
			cp.Failed++
			continue
		}
		cp.Games++
		c := cell[g.Seats]
		if c == nil {
			c = &acc{}
			cell[g.Seats] = c
		}
		c.sum, c.n, c.s0, c.s1 = c.sum+g.Score, c.n+1, c.s0+g.Seat0Score, c.s1+g.Seat1Score
		for i, m := range []map[string]*acc{mean0, mean1} {
			a := m[g.Seats[i]]
			if a == nil {
				a = &acc{}
				m[g.Seats[i]] = a
			}
			a.sum, a.n = a.sum+g.Score, a.n+1
		}
	}
	mean := func(m map[string]*acc, a string) float64 {
		if x := m[a]; x != nil && x.n > 0 {
			return x.sum / x.n
		}
		return math.NaN()
	}
	sortBy := func(m map[string]*acc, desc bool) []string {
		out := append([]string(nil), agents...)
		sort.SliceStable(out, func(i, j int) bool {
			a, b := mean(m, out[i]), mean(m, out[j])
			if math.IsNaN(a) || math.IsNaN(b) {
				return !math.IsNaN(a) && math.IsNaN(b)
			}
			if desc {
				return a > b
			}
			return a < b
		})
		return out
	}
	cp.Rows, cp.Cols = sortBy(mean0, cooperative), sortBy(mean1, true)
	cp.Matrix = make([][]float64, len(cp.Rows))
	for i, r := range cp.Rows {
		cp.Matrix[i] = make([]float64, len(cp.Cols))
		for j, c := range cp.Cols {
			cp.Matrix[i][j] = math.NaN()
			if x := cell[[2]string{r, c}]; x != nil && x.n > 0 {
				cp.Matrix[i][j] = x.sum / x.n
			}
		}
	}
	// own is a's mean own score against b in seat s.
	own := func(a, b string, s int) (float64, bool) {
		key := [2]string{a, b}
		if s == 1 {
			key = [2]string{b, a}
		}
		x := cell[key]
		if x == nil || x.n == 0 {
			return 0, false
		}
		if s == 0 {
			return x.s0 / x.n, true
		}
		return x.s1 / x.n, true
	}
	for _, a := range agents {
		cp.Worst[a] = map[string]Worst{}
		for s := 0; s < 2; s++ {
			best := Worst{Score: math.Inf(1)}
			for _, b := range agents {
				if b == a {
					continue
				}
				if v, ok := own(a, b, s); ok && v < best.Score {
					best = Worst{Opponent: b, Score: v}
				}
			}
			if best.Opponent != "" {
				cp.Worst[a][seats[s]] = best
			}
		}
	}
	// margin is a's mean own score against b over both seats minus b's.
	margin := func(a, b string) (float64, bool) {
		var sum float64
		n := 0
		for s := 0; s < 2; s++ {
			va, oka := own(a, b, s)
			vb, okb := own(b, a, 1-s)
			if oka && okb {
				sum += va - vb
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	beats := func(a, b string) bool { m, ok := margin(a, b); return ok && m > 0 }
	for i := 0; i < len(agents) && !cooperative; i++ {
		for j := i + 1; j < len(agents); j++ {
			for k := j + 1; k < len(agents); k++ {
				a, b, c := agents[i], agents[j], agents[k]
				switch {
				case beats(a, b) && beats(b, c) && beats(c, a):
					cp.Cycles = append(cp.Cycles, [3]string{a, b, c})
				case beats(a, c) && beats(c, b) && beats(b, a):
					cp.Cycles = append(cp.Cycles, [3]string{a, c, b})
				}
			}
		}
	}
	return cp
}

// Report files of a cross-play report.
const (
	FigCrossPlay = "crossplay.png"
	FigRatings   = "league-ratings.png"
)

// WriteCrossPlayReport writes outDir/report.md with the cross-play
// heatmap (sorted as seed 001's figure 1), each league role's rating over
// training with 95 % intervals (± 1.96 RD) from the league's last file
// (nil: no league), the worst-case opponent per agent and the 3-cycles.
// skipped names agents left out (scripted members, which play one seat);
// scale is the headline score's: its label names it, and its range (0 to
// 1 when unknown) spans the heatmap's colours.
func WriteCrossPlayReport(outDir string, cp CrossPlay, lg *State, skipped []string, scale dataset.ScoreScale) (string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("league.WriteCrossPlayReport: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Cross-play\n\n%d games among %d agents (%d failed), both seats.\n\n", cp.Games, len(cp.Agents), cp.Failed)
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "Left out (they play one seat only): %s.\n\n", strings.Join(skipped, ", "))
	}
	label := scale.Label()
	lo, hi, mul, format, cells := scale.Min, scale.Max, 1.0, "%.1f", ""
	if hi <= lo {
		lo, hi = 0, 1
	}
	if lo == 0 && hi == 1 {
		mul, format, cells = 100, "%.0f", "; cells ×100"
	}
	size := 200 + 44*len(cp.Cols)
	order, xl, yl := "lowest mean first; columns %s agents, highest first (seed 001's figure 1)", cp.Seats[1]+" (sorted as seed 001's figure 1)", cp.Seats[0]+" (sorted)"
	if cp.Cooperative {
		order, xl, yl = "best partners first; columns %s agents, likewise", cp.Seats[1]+" (best partner first)", cp.Seats[0]+" (best partner first)"
	}
	hm := figure.Heatmap{Title: "Cross-play: mean " + label, XLabel: xl, YLabel: yl,
		Rows: cp.Rows, Cols: cp.Cols, Values: cp.Matrix, Min: lo, Max: hi, Scale: mul, Format: format, WidthPx: max(size, 560), HeightPx: max(size-40, 480)}
	if err := hm.WritePNG(filepath.Join(outDir, FigCrossPlay)); err != nil {
		fmt.Fprintf(&b, "No cross-play figure: %v.\n\n", err)
	} else {
		fmt.Fprintf(&b, "![cross-play](%s)\n\nCells are the mean %s. Rows are %s agents, "+order+"%s.\n\n",
			FigCrossPlay, label, cp.Seats[0], cp.Seats[1], cells)
	}
	worst := "Worst-case opponent per agent (exploitability proxy)"
	if cp.Cooperative {
		worst = "Worst partner per agent (the seats share one score)"
	}
	fmt.Fprintf(&b, "## %s\n\n| agent | %s: worst opponent | own score | %s: worst opponent | own score |\n|---|---|---|---|---|\n", worst, cp.Seats[0], cp.Seats[1])
	for _, a := range cp.Agents {
		fmt.Fprintf(&b, "| %s |", a)
		for _, s := range cp.Seats {
			if w, ok := cp.Worst[a][s]; ok {
				fmt.Fprintf(&b, " %s | %.3f |", w.Opponent, w.Score)
			} else {
				b.WriteString(" – | – |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Non-transitive cycles\n\n")
	if cp.Cooperative {
		b.WriteString("Not looked for: in a cooperative game both seats earn one score, so no agent beats another.\n\n")
	} else if len(cp.Cycles) == 0 {
		b.WriteString("None: no three agents a, b, c with a beating b, b beating c and c beating a (beating: a higher own score over both seats).\n\n")
	}
	for _, c := range cp.Cycles {
		fmt.Fprintf(&b, "- %s > %s > %s > %s\n", c[0], c[1], c[2], c[0])
	}
	if lg != nil {
		b.WriteString("\n## Ratings over training\n\n")
		var lines []figure.Line
		var bands []figure.Band
		for i, r := range lg.Roles {
			var x, y, lo, hi []float64
			for _, p := range r.History {
				x, y = append(x, float64(p.Step)), append(y, p.R)
				lo, hi = append(lo, p.R-1.96*p.RD), append(hi, p.R+1.96*p.RD)
			}
			lines = append(lines, figure.Line{Label: "trained vs " + r.Role + " league", X: x, Y: y, Color: figure.Palette(i)})
			bands = append(bands, figure.Band{Label: "± 1.96 RD", X: x, Lo: lo, Hi: hi})
			if n := len(r.History); n > 0 {
				p := r.History[n-1]
				fmt.Fprintf(&b, "- %s: the trained policy's Glicko-2 rating after step %d: %.0f ± %.0f (95 %%), %d members.\n", r.Role, p.Step, p.R, 1.96*p.RD, len(r.Members))
			}
		}
		ch := figure.Chart{Title: "The trained policy's rating against its league", XLabel: "step", YLabel: "Glicko-2 rating", Lines: lines, Bands: bands}
		if err := ch.WritePNG(filepath.Join(outDir, FigRatings)); err != nil {
			fmt.Fprintf(&b, "\nNo ratings figure: %v.\n", err)
		} else {
			fmt.Fprintf(&b, "\n![ratings](%s)\n", FigRatings)
		}
	}
	path := filepath.Join(outDir, "report.md")
	if err := fsutil.WriteFileAtomic(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("league.WriteCrossPlayReport: %w", err)
	}
	return path, nil
}
