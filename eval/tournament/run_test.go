package tournament

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

// TestRunKilledAndResumed: a tournament stopped after some games and
// started again records every game once, and exactly what an
// uninterrupted tournament records.
func TestRunKilledAndResumed(t *testing.T) {
	url := startSim(t, sim.Options{})
	spec := mustSpec(t, specYAML(url, url, 2, ""))
	full := t.TempDir()
	sum, err := Run(context.Background(), Options{Dir: full, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 24 || sum.Played != 24 || !sum.Complete {
		t.Fatalf("uninterrupted: %+v, want 24 games (6 pairs × 2 rounds × 2 framings)", sum)
	}
	want := map[string]string{}
	recs, err := ReadRecords(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		want[r.Match.ID] = r.Rollout.Outcome
	}

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	_, err = Run(ctx, Options{Dir: dir, Spec: spec, Progress: func(done, failed, total int) {
		if n.Add(1) == 9 { // the start, then 8 games
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run: %v, want context.Canceled", err)
	}
	part, _ := ReadRecords(dir)
	if len(part) < 8 || len(part) >= 24 {
		t.Fatalf("%d games recorded before the stop", len(part))
	}
	// A write killed half way leaves a temporary file behind.
	if err := os.WriteFile(filepath.Join(dir, GamesDir, ".f0-r01-0-1.json.tmp-123"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err = Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resumed != len(part) || sum.Played != 24-len(part) || !sum.Complete {
		t.Errorf("resumed run %+v after %d recorded", sum, len(part))
	}
	got, _ := ReadRecords(dir)
	if len(got) != 24 {
		t.Fatalf("%d records, want 24", len(got))
	}
	for _, r := range got {
		if r.Failed {
			t.Errorf("game %s failed: %v", r.Match.ID, r.Errors)
		}
		if r.Rollout.Outcome != want[r.Match.ID] {
			t.Errorf("game %s differs from the uninterrupted tournament's", r.Match.ID)
		}
		if h := r.Rollout.Role("holder"); h == nil || h.Model != r.Match.Holder || !h.Scored {
			t.Errorf("game %s: holder outcome %+v", r.Match.ID, h)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, GamesDir))
	if len(entries) != 24 {
		t.Errorf("%d files in games/, want 24 (temporary files removed)", len(entries))
	}
	// The rollouts parquet holds every game for `parley export`.
	rs, err := dataset.ReadAllRollouts(dataset.RunDir(dir).RolloutsPath(0))
	if err != nil || len(rs) != 24 {
		t.Errorf("rollouts parquet: %d rows, %v", len(rs), err)
	}
	// A second run has nothing left to play.
	sum, err = Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err != nil || sum.Played != 0 || sum.Resumed != 24 {
		t.Errorf("third run: %+v, %v", sum, err)
	}
	// A changed spec is refused.
	spec2 := spec
	spec2.Rounds = 3
	if _, err := Run(context.Background(), Options{Dir: dir, Spec: spec2}); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("a changed spec: %v", err)
	}
}

// TestScheduleCounts: seed 001's schedule gives 1,050 games at 15 agents
// and 5 rounds, each ordered pairing 5 times; "both" doubles it.
func TestScheduleCounts(t *testing.T) {
	var b strings.Builder
	b.WriteString("judge: {base_url: http://j, model: j}\nagents:\n")
	for i := 0; i < 15; i++ {
		b.WriteString("  - {name: a" + string(rune('a'+i)) + ", endpoint: http://x, model: m}\n")
	}
	spec := mustSpec(t, b.String())
	scen, err := endowment.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Schedule(spec, scen)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1050 {
		t.Fatalf("%d games, want 1050", len(ms))
	}
	perPair := map[[2]string]int{}
	perFraming := map[string]int{}
	ids := map[string]bool{}
	for _, m := range ms {
		perPair[[2]string{m.Holder, m.Requester}]++
		perFraming[m.Framing]++
		if ids[m.ID] {
			t.Fatalf("duplicate id %s", m.ID)
		}
		ids[m.ID] = true
		if m.Holder == m.Requester {
			t.Fatal("self-play scheduled")
		}
	}
	if len(perPair) != 210 || perFraming["singular"] != 525 || perFraming["group"] != 525 {
		t.Errorf("%d ordered pairings, framings %v", len(perPair), perFraming)
	}
	for p, n := range perPair {
		if n != 5 {
			t.Errorf("pairing %v plays %d games, want 5", p, n)
		}
	}
	spec.Schedule = ScheduleBoth
	ms, _ = Schedule(spec, scen)
	if len(ms) != 2100 {
		t.Errorf("both: %d games, want 2100", len(ms))
	}
}
