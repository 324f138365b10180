package league

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// game is a zero-sum game of seed 001's kind: the seat-1 requester gets
// share from the seat-0 holder.
func game(holder, requester string, share float64) CrossGame {
	return CrossGame{Seats: [2]string{holder, requester}, Score: share, Seat0Score: 1 - share, Seat1Score: share}
}

func TestAnalyseCrossPlay(t *testing.T) {
	agents := []string{"a", "b", "c"}
	seats := [2]string{"holder", "requester"}
	// a extracts from b, b from c, c from a: a cycle. Every agent holds
	// firm against the third.
	games := []CrossGame{
		game("b", "a", 0.9), game("a", "b", 0.0),
		game("c", "b", 0.9), game("b", "c", 0.0),
		game("a", "c", 0.9), game("c", "a", 0.0),
		{Seats: [2]string{"a", "b"}, Failed: true},
	}
	cp := AnalyseCrossPlay(agents, seats, games, false)
	if cp.Games != 6 || cp.Failed != 1 {
		t.Errorf("games %d failed %d, want 6 and 1", cp.Games, cp.Failed)
	}
	if len(cp.Cycles) != 1 || !slices.Contains(cp.Cycles[0][:], "a") {
		t.Errorf("cycles = %v, want the one cycle a > b > c > a", cp.Cycles)
	}
	if w := cp.Worst["a"]["holder"]; w.Opponent != "c" || math.Abs(w.Score-0.1) > 1e-12 {
		t.Errorf("a's worst opponent as holder = %+v, want c (it keeps 0.1)", w)
	}
	if i := slices.Index(cp.Rows, "a"); i < 0 || !math.IsNaN(cp.Matrix[i][slices.Index(cp.Cols, "a")]) {
		t.Errorf("self-pairing cell should be empty: %v", cp.Matrix)
	}

	// A transitive order: a holds best and extracts most; rows and
	// columns sorted as figure 1, no cycle.
	tr := AnalyseCrossPlay(agents, seats, []CrossGame{
		game("a", "b", 0.1), game("a", "c", 0.0), game("b", "a", 0.8),
		game("b", "c", 0.3), game("c", "a", 0.9), game("c", "b", 0.5),
	}, false)
	if !slices.Equal(tr.Rows, []string{"a", "b", "c"}) || !slices.Equal(tr.Cols, []string{"a", "b", "c"}) || len(tr.Cycles) != 0 {
		t.Errorf("rows %v cols %v cycles %v, want a b c twice and none", tr.Rows, tr.Cols, tr.Cycles)
	}
	dir := t.TempDir()
	lg := New("r", []string{"requester"})
	lg.Roles[0].History = []Point{{Step: 1, R: 1500, RD: 300}, {Step: 2, R: 1550, RD: 200}}
	path, err := WriteCrossPlayReport(dir, tr, lg, []string{"pool[0] (scripted)"}, dataset.ScoreScale{Name: "share", Min: 0, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"![cross-play](crossplay.png)", "| a | b | 0.900 |", "None: no three agents", "1550 ± 392", "pool[0] (scripted)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{FigCrossPlay, FigRatings} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// partners is a cooperative game: both seats earn score.
func partners(a, b string, score float64) CrossGame {
	return CrossGame{Seats: [2]string{a, b}, Score: score, Seat0Score: score, Seat1Score: score}
}

// TestAnalyseCrossPlayCooperative: in a cooperative game (seed 000's
// deliberation) both axes put the best partner first, the worst opponent
// is the partner with the lowest shared score, the same scores that make
// a cycle in a zero-sum game make none, and the report says so on the
// scale's own range.
func TestAnalyseCrossPlayCooperative(t *testing.T) {
	agents := []string{"base", "step-4", "step-8"}
	seats := [2]string{"A", "B"}
	games := []CrossGame{
		partners("base", "step-4", 2), partners("step-4", "base", 2.5),
		partners("base", "step-8", 3), partners("step-8", "base", 3.5),
		partners("step-4", "step-8", 4.5), partners("step-8", "step-4", 5),
	}
	cp := AnalyseCrossPlay(agents, seats, games, true)
	if want := []string{"step-8", "step-4", "base"}; !slices.Equal(cp.Rows, want) || !slices.Equal(cp.Cols, want) {
		t.Errorf("rows %v cols %v, want %v both (best partner first)", cp.Rows, cp.Cols, want)
	}
	if w := cp.Worst["step-8"]["A"]; w.Opponent != "base" || w.Score != 3.5 {
		t.Errorf("step-8's worst partner as A = %+v, want base at 3.5", w)
	}
	if w := cp.Worst["base"]["B"]; w.Opponent != "step-4" || w.Score != 2.5 {
		t.Errorf("base's worst partner as B = %+v, want step-4 at 2.5", w)
	}
	if len(cp.Cycles) != 0 || !cp.Cooperative {
		t.Errorf("cycles %v cooperative %v, want none and true", cp.Cycles, cp.Cooperative)
	}
	if i, j := slices.Index(cp.Rows, "step-8"), slices.Index(cp.Cols, "step-4"); cp.Matrix[i][j] != 5 {
		t.Errorf("cell step-8 × step-4 = %v, want 5", cp.Matrix[i][j])
	}
	dir := t.TempDir()
	path, err := WriteCrossPlayReport(dir, cp, nil, nil, dataset.ScoreScale{Name: "CA", Min: 1, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"mean CA 1–5", "best partners first", "Worst partner per agent", "| step-8 | base | 3.500 |", "Not looked for"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "×100") {
		t.Errorf("a 1–5 scale's cells are not percentages:\n%s", md)
	}
}
