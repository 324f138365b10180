package league

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
	cp := AnalyseCrossPlay(agents, seats, games)
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
	})
	if !slices.Equal(tr.Rows, []string{"a", "b", "c"}) || !slices.Equal(tr.Cols, []string{"a", "b", "c"}) || len(tr.Cycles) != 0 {
		t.Errorf("rows %v cols %v cycles %v, want a b c twice and none", tr.Rows, tr.Cols, tr.Cycles)
	}
	dir := t.TempDir()
	lg := New("r", []string{"requester"})
	lg.Roles[0].History = []Point{{Step: 1, R: 1500, RD: 300}, {Step: 2, R: 1550, RD: 200}}
	path, err := WriteCrossPlayReport(dir, tr, lg, []string{"pool[0] (scripted)"}, "share")
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
