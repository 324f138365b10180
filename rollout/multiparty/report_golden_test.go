package multiparty_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/golden"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty"
)

// TestReportGolden renders the game's section of `parley report` from
// testdata/report/rollouts.jsonl and compares it with
// testdata/report/report.golden.md (go test -update rewrites it).
//
// The fixture is TestReportTables' sixteen games (BRS under S, S→P, S+P
// and No trust, four one-game series each, the first two series at step
// 0 and the others at step 1), the hand-written episode of
// testdata/fixture_episode.json (rubric, S+P, at step 1) and a failed
// rollout (a copy of a BRS S game, with a deal), which the report leaves
// out. Table 3's BRS row is
// TestReportTables' hand-derived one: the rubric episode is another
// method. Table 1 splits the No-trust games (no deal, a deal, no, no) by
// what played the honest parties: the model m at step 0 (one deal in two
// series, 50%), the trained policy after it (none in two, 0%).
func TestReportGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "report", "rollouts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []dataset.Rollout
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r dataset.Rollout
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("rollouts.jsonl line %d: %v", len(rs)+1, err)
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	md, err := multiparty.Report(rollout.ReportInput{RunDir: dir, Dir: dir, Rollouts: func(fn func(dataset.Rollout) error) error {
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
	for _, w := range []string{
		"17 games in 17 series",
		"| BRS | 50.0 | 75.0 | 100.0 | +25.0 ± 79.6 | 0.50 | +50.0 ± 91.9 | +25.0 ± 79.6 |",
		"| m | 50.0 / 0.0 (n = 2) |",
		"| trained policy | 0.0 / 0.0 (n = 2) |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("the report lacks %q", w)
		}
	}
	golden.Check(t, filepath.Join("testdata", "report", "report.golden.md"), []byte(md))
}
