package toygame_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/golden"
	"github.com/parleyhq/parley/internal/toygame"
	"github.com/parleyhq/parley/rollout"
)

// readLines decodes a JSON-lines file, one T a line.
func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReportGolden renders the game's section of `parley report` from
// testdata/report/rollouts.jsonl and compares it with
// testdata/report/report.golden.md (go test -update rewrites it).
//
// Step 0 has totals 3 and 5: two games, mean 4. Step 1 has 6, a failed
// game and one whose outcome cannot be read, both left out: one game,
// mean 6.
func TestReportGolden(t *testing.T) {
	rs := readLines[dataset.Rollout](t, filepath.Join("testdata", "report", "rollouts.jsonl"))
	md, err := toygame.Report(rollout.ReportInput{Dir: t.TempDir(), Rollouts: func(fn func(dataset.Rollout) error) error {
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| 0 | 2 | 4.00 |\n| 1 | 1 | 6.00 |\n"} {
		if !strings.Contains(md, w) {
			t.Errorf("the report lacks %q:\n%s", w, md)
		}
	}
	golden.Check(t, filepath.Join("testdata", "report", "report.golden.md"), []byte(md))
}

// tournamentFixture is testdata/tournament/games.jsonl as a report's
// input: agents a and b, six games scheduled.
func tournamentFixture(t *testing.T) rollout.TournamentReport {
	return rollout.TournamentReport{Name: "fixture", Dir: t.TempDir(), Agents: []rollout.TournamentAgent{{Name: "a"}, {Name: "b"}},
		Scheduled: 6, Games: readLines[rollout.TournamentGame](t, filepath.Join("testdata", "tournament", "games.jsonl"))}
}

// TestTournamentReportGolden renders the tournament report of
// testdata/tournament/games.jsonl and compares it with
// testdata/tournament/report.golden.md.
//
// a as player against b: 3 of 4 points and 1 of 4, a mean share of .5;
// b against a: 2 of 5 (.4) and a game without points (½ each): .45; the
// failed game is counted and left out.
func TestTournamentReportGolden(t *testing.T) {
	md, analysis, err := toygame.Tournament.Report(tournamentFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"2 agents, 6 games scheduled, 5 recorded, 1 failed.", "| a | b | 2 | 0.500 |", "| b | a | 2 | 0.450 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("the report lacks %q:\n%s", w, md)
		}
	}
	if _, err := json.Marshal(analysis); err != nil {
		t.Errorf("the analysis is not JSON: %v", err)
	}
	golden.Check(t, filepath.Join("testdata", "tournament", "report.golden.md"), []byte(md))
}

// TestTournamentReportUnreadable: a played game whose outcome cannot be
// read fails the report, naming the game.
func TestTournamentReportUnreadable(t *testing.T) {
	in := tournamentFixture(t)
	in.Games[0].Rollout.Outcome = "not json"
	if _, _, err := toygame.Tournament.Report(in); err == nil || !strings.Contains(err.Error(), "outcome of g1") {
		t.Errorf("Report() = %v, want an error naming g1's outcome", err)
	}
}
