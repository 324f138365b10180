package endowment_test

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
	"github.com/parleyhq/parley/rollout/endowment"
)

// readRollouts reads a JSON-lines file of rollouts.
func readRollouts(t *testing.T, path string) []dataset.Rollout {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dataset.Rollout
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r dataset.Rollout
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stream is ReportInput.Rollouts over rs.
func stream(rs []dataset.Rollout) func(fn func(dataset.Rollout) error) error {
	return func(fn func(dataset.Rollout) error) error {
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestReportGolden renders the game's section of `parley report` from
// testdata/report/rollouts.jsonl and compares it with
// testdata/report/report.golden.md (go test -update rewrites it).
//
// The fixture, by step: 0 shares .2, .4 (refused on turn 1), .6: mean
// .400, refusal 1/3; 1 shares .1 (refused), 0 (refused), .5 and a failed
// rollout: .200, 2/3; 2 shares 0 and .3, both refused: .150, 1. The
// trained holder met the base model four times (.2, .4, .1, 0: .175) and
// the external one once (0); the trained requester met the external
// model twice (.6, .5: .550) and the base model once (.3).
func TestReportGolden(t *testing.T) {
	dir := t.TempDir()
	md, err := endowment.Report(rollout.ReportInput{RunDir: dir, Dir: dir, Rollouts: stream(readRollouts(t, filepath.Join("testdata", "report", "rollouts.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 0 | 3 | 0.400 | 0.333 |", "| 1 | 3 | 0.200 | 0.667 |", "| 2 | 2 | 0.150 | 1.000 |",
		"| holder | base:qwen-base | 4 | 0.175 |", "| holder | external:gpt-judge | 1 | 0.000 |",
		"| requester | base:qwen-base | 1 | 0.300 |", "| requester | external:gpt-judge | 2 | 0.550 |",
		"1 failed rollouts left out.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	golden.Check(t, filepath.Join("testdata", "report", "report.golden.md"), []byte(md))
	if _, err := os.Stat(filepath.Join(dir, "endowment_share_by_step.png")); err != nil {
		t.Errorf("the figure: %v", err)
	}
}

// TestReportEmpty: no rollouts is no section; rollouts none of which
// finished is a section that says so.
func TestReportEmpty(t *testing.T) {
	if md, err := endowment.Report(rollout.ReportInput{Dir: t.TempDir()}); md != "" || err != nil {
		t.Errorf("Report(no rollouts) = %q, %v, want nothing", md, err)
	}
	failed := []dataset.Rollout{{Env: endowment.Name, RolloutID: "x", Failed: true, Error: "down"}}
	md, err := endowment.Report(rollout.ReportInput{Dir: t.TempDir(), Rollouts: stream(failed)})
	if want := "## Endowment game\n\nNo finished endowment rollouts.\n"; md != want || err != nil {
		t.Errorf("Report(one failed) = %q, %v, want %q", md, err, want)
	}
}
