package deliberation_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/golden"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
)

// TestTournamentReportGolden renders the game's tournament report (it has
// no section of `parley report`) from testdata/tournament/games.jsonl and
// compares it with testdata/tournament/report.golden.md (go test -update
// rewrites it).
//
// x in seat A against y: judged 4 (agreed) and 2 (not): mean 3, agreement
// .5. y against x: judged 5 (agreed): 5 and 1; an unjudged game and a
// failed one are counted together and left out.
func TestTournamentReportGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "tournament", "games.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := rollout.TournamentReport{Name: "fixture", Dir: t.TempDir(), Agents: []rollout.TournamentAgent{{Name: "x"}, {Name: "y"}}, Scheduled: 6}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var g rollout.TournamentGame
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("games.jsonl line %d: %v", len(in.Games)+1, err)
		}
		in.Games = append(in.Games, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	md, analysis, err := deliberation.Tournament.Report(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"2 agents, 6 games scheduled, 5 recorded, 2 failed or unjudged.", "| x | y | 2 | 3.000 | 0.50 |", "| y | x | 1 | 5.000 | 1.00 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("the report lacks %q:\n%s", w, md)
		}
	}
	if ps, ok := analysis.([]deliberation.Pairing); !ok || len(ps) != 2 {
		t.Errorf("analysis = %#v, want the two pairings", analysis)
	}
	golden.Check(t, filepath.Join("testdata", "tournament", "report.golden.md"), []byte(md))
}
