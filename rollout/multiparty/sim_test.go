package multiparty_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/killtest"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
	"github.com/parleyhq/parley/sim"
)

// repeatedConfig plays the five prompt conditions of the issue (No trust,
// S, S+P, S0.5+P, Srand+P), S+P with each assessment method.
func repeatedConfig() *multiparty.Config {
	cfg := multiparty.DefaultConfig()
	cfg.Conditions = []string{"none", "brs/s", "brs/s_p", "rubric/s_p", "freeform/s_p", "s05_p", "srand_p"}
	cfg.SeriesLength = 10
	return cfg
}

// runRepeated plays plan against an in-process serve-sim over HTTP whose
// replies take latency, recording under dir, then writes the rollouts.
func runRepeated(ctx context.Context, t testing.TB, dir string, plan []rollout.Series, latency time.Duration) (rollout.SeriesSummary, error) {
	s, err := sim.New(sim.Options{LatencyMedian: latency, Games: []sim.Answerer{multiparty.Sim{}}})
	if err != nil {
		return rollout.SeriesSummary{}, err
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client, err := llm.New(llm.Options{Endpoints: []string{srv.URL}})
	if err != nil {
		return rollout.SeriesSummary{}, err
	}
	defer client.Close()
	return rollout.RunSeriesTo(ctx, rollout.RunnerOptions{
		Game: multiparty.New(*repeatedConfig(), 256), Policy: client, Model: sim.DefaultModel, Concurrency: 8, Seed: 42,
		Sampling: llm.Sampling{MaxTokens: 256, Temperature: 1, TopP: 1},
	}, dir, plan)
}

func repeatedPlan(t testing.TB, n int) []rollout.Series {
	plan, err := multiparty.Plan(*repeatedConfig(), fixedSet(t, scenario.Type2HB2G), n, 7)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestRepeatedRunSim plays two series of 10 games per condition against
// serve-sim's scripted parties and checks that trust evolves from the
// prior, that the adversary (which votes NO on every proposal) is
// detected within the expected number of games, and that the rollouts
// round-trip through parquet.
func TestRepeatedRunSim(t *testing.T) {
	dir := t.TempDir()
	plan := repeatedPlan(t, 2)
	sum, err := runRepeated(context.Background(), t, dir, plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Played != 140 || sum.Failed != 0 {
		t.Fatalf("summary %+v, want 140 games played, none failed", sum)
	}
	rs, err := dataset.ReadAllRollouts(rollout.SeriesRolloutsPath(dir))
	if err != nil || len(rs) != 140 {
		t.Fatalf("rollouts file: %d rollouts, %v", len(rs), err)
	}
	// detection[condition][game] over series and honest observers.
	detection := map[string][]float64{}
	for si, s := range plan {
		recs, err := rollout.ReadSeries(filepath.Join(dir, "series"), s.ID)
		if err != nil || len(recs) != 10 {
			t.Fatalf("%s: %d records, %v", s.ID, len(recs), err)
		}
		for g, rec := range recs {
			r := rec.Rollout
			if j, _ := json.Marshal(rs[si*10+g].Outcome); string(j) != func() string { b, _ := json.Marshal(r.Outcome); return string(b) }() {
				t.Errorf("%s game %d: the parquet rollout differs from the record", s.ID, g)
			}
			if r.PrefixBreaks != 0 || r.Requests == 0 {
				t.Errorf("%s game %d: %d prefix breaks, %d requests", s.ID, g, r.PrefixBreaks, r.Requests)
			}
			o, err := multiparty.ParseOutcome(&r)
			if err != nil {
				t.Fatal(err)
			}
			st, err := trust.ParseState(rec.State)
			if err != nil || st.Games != g+1 {
				t.Fatalf("%s game %d: state %v, %v", s.ID, g, st, err)
			}
			if !o.Trust.Updates() {
				if o.TrustAfter != nil || !equalTrust(st.Trust, trust.NewState(o.Trust, st.Names).Trust) {
					t.Errorf("%s game %d: trust moved under %s", s.ID, g, o.Trust.Label())
				}
				continue
			}
			if equalTrust(o.TrustBefore, o.TrustAfter) {
				t.Errorf("%s game %d: trust did not change", s.ID, g)
			}
			e, _ := multiparty.MeasureEpisode(&r)
			if e.Separation <= 0 {
				t.Errorf("%s game %d: separation %.3f: the adversary is trusted as much as honest peers", s.ID, g, e.Separation)
			}
			detection[o.Trust.Label()] = append(detection[o.Trust.Label()], 0)
			detection[o.Trust.Label()][len(detection[o.Trust.Label()])-1] = e.Detection
		}
	}
	// The expected number of games: the scripted adversary is detectable
	// by construction (it is the only party that never votes for
	// anything), so from game 5 on every honest party of every series
	// ranks it alone lowest, under every assessment method, and by game 3
	// at least three in four do.
	for cond, d := range detection {
		for g := 0; g < 10; g++ {
			a, b := d[g], d[10+g]
			if g >= 4 && (a < 1 || b < 1) {
				t.Errorf("%s: detection %.2f and %.2f at game %d, want 1 from game 5", cond, a, b, g+1)
			}
			if g >= 2 && (a+b)/2 < 0.75 {
				t.Errorf("%s: mean detection %.2f at game %d, want at least 0.75 from game 3", cond, (a+b)/2, g+1)
			}
		}
		t.Logf("%s: detection after each game (two series): %v", cond, d)
	}
	if len(detection) != 4 {
		t.Errorf("%d updating conditions, want 4", len(detection))
	}
}

func equalTrust(a, b map[string]map[string]float64) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestRepeatedChild is the child process of TestRepeatedResumesAfterKill.
func TestRepeatedChild(t *testing.T) {
	dir := os.Getenv("PARLEY_TEST_MULTIPARTY_DIR")
	if dir == "" {
		t.Skip("child of TestRepeatedResumesAfterKill")
	}
	if _, err := runRepeated(context.Background(), t, dir, repeatedPlan(t, 1), 0); err != nil {
		t.Fatal(err)
	}
}

// TestRepeatedResumesAfterKill runs one series of 10 games per condition
// in a child process, SIGKILLs it at random points until it finishes, and
// checks that every game's record and the final trust states equal an
// uninterrupted run's.
func TestRepeatedResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process repeatedly")
	}
	want := t.TempDir()
	plan := repeatedPlan(t, 1)
	if _, err := runRepeated(context.Background(), t, want, plan, 0); err != nil {
		t.Fatal(err)
	}
	got := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 11))
	// A kill lands 0 to 60 ms after a run has recorded a game: every run
	// that is killed made progress, and kills land mid-run however fast
	// the machine is.
	kills := killtest.Until(t, "TestRepeatedChild", []string{"PARLEY_TEST_MULTIPARTY_DIR=" + got},
		func() int { return countRecords(got) }, func() time.Duration { return time.Duration(rng.IntN(60)) * time.Millisecond })
	if kills < 2 {
		t.Fatalf("%d kills landed before the child finished; the test needs a slower child", kills)
	}
	for _, s := range plan {
		a, err := rollout.ReadSeries(filepath.Join(want, "series"), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rollout.ReadSeries(filepath.Join(got, "series"), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != 10 || len(b) != 10 {
			t.Fatalf("%s: %d and %d games recorded, want 10", s.ID, len(a), len(b))
		}
		for i := range a {
			a[i].Rollout.StartedUnixMS, a[i].Rollout.RolloutMS = 0, 0
			b[i].Rollout.StartedUnixMS, b[i].Rollout.RolloutMS = 0, 0
			ja, _ := json.Marshal(a[i])
			jb, _ := json.Marshal(b[i])
			if string(ja) != string(jb) {
				t.Errorf("%s game %d differs after %d kills", s.ID, i, kills)
			}
		}
		if string(a[9].State) != string(b[9].State) {
			t.Errorf("%s: final trust state %s, want %s", s.ID, b[9].State, a[9].State)
		}
	}
	t.Logf("%d kills", kills)
}

// countRecords counts the game records under dir's series.
func countRecords(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "series", "*", "game-*.json"))
	return len(files)
}
