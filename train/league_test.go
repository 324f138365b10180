package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// withLeague makes role B of the deliberation game a league of the run's
// snapshots (every step's), drawn by pfsp, at most two adapters loaded.
func withLeague(o *train.LoopOptions) {
	o.League = map[string]train.LeagueRole{"B": {Options: league.Options{SnapshotEvery: 1, Draw: league.DrawPFSP, MaxLoaded: 2}}}
}

// fixNonce starts dir's state with a fixed nonce, so two runs name their
// adapters alike.
func fixNonce(t *testing.T, dir dataset.RunDir) {
	t.Helper()
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	if err := train.SaveState(dir.StatePath(), train.State{RunID: "t", Seed: 5, Nonce: "0123abcd"}); err != nil {
		t.Fatal(err)
	}
}

func readLeague(t *testing.T, dir dataset.RunDir, step int) *league.State {
	t.Helper()
	s, ok, err := league.Load(dir.LeaguePath(step), "t")
	if err != nil || !ok {
		t.Fatalf("league step %d: %v (found %v)", step, err, ok)
	}
	return s
}

// TestLeagueTraining: a league plays role B; every step's groups draw a
// member, recorded in the rollouts, the league after each step is written
// with its ratings, snapshots join as the policy moves on, and the churn
// of adapter loads is in the metrics.
func TestLeagueTraining(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	if _, err := trained(t, dir, url, 4, 0, withLeague); err != nil {
		t.Fatal(err)
	}
	s := readLeague(t, dir, 4)
	r := s.Role("B")
	var ids []string
	drawn := 0
	for _, m := range r.Members {
		ids = append(ids, m.ID)
		drawn += m.Drawn
	}
	if want := "snapshot-000000 snapshot-000001 snapshot-000002 snapshot-000003"; strings.Join(ids, " ") != want {
		t.Errorf("members after step 4 = %v, want %s", ids, want)
	}
	if drawn != 4*4 || len(r.History) != 4 {
		t.Errorf("draws %d (want 16 groups), history %d points (want 4)", drawn, len(r.History))
	}
	// At most max_loaded stay loaded, or the snapshots the step drew when
	// it drew more.
	distinct := 0
	for _, m := range r.Members {
		if m.StepDrawn > 0 && m.Version > 0 {
			distinct++
		}
	}
	if len(r.Loaded) > max(2, distinct) {
		t.Errorf("loaded %v: want at most max(2, %d) loaded", r.Loaded, distinct)
	}
	// Churn: a step's loads are the snapshots it drew that were neither
	// loaded after the step before nor the trained policy's adapter (the
	// loop serves that one); whether any happen depends on the draws.
	nonce := mustState(t, dir).Nonce
	var prev []league.Slot
	loads := 0
	for step := 1; step <= 4; step++ {
		rs, err := dataset.ReadAllRollouts(dir.RolloutsPath(step))
		if err != nil {
			t.Fatal(err)
		}
		st := readLeague(t, dir, step).Role("B")
		keep := ""
		if step > 1 {
			keep = fmt.Sprintf("p-%s-%06d", nonce, step-1)
		}
		fresh := map[string]bool{}
		for _, x := range rs {
			b := x.Role("B")
			if b == nil || b.MemberVersion == 0 || b.Model == keep || slices.ContainsFunc(prev, func(s league.Slot) bool { return s.Model == b.Model }) {
				continue
			}
			fresh[b.Model] = true
		}
		if st.Loads != len(fresh) {
			t.Errorf("step %d: %d loads, want %d (drawn, not loaded before: %v; loaded before %v)", step, st.Loads, len(fresh), fresh, prev)
		}
		loads += len(fresh)
		prev = st.Loaded
		for _, x := range rs {
			b := x.Role("B")
			m := st.Member(b.Member)
			if b == nil || m == nil || int(b.MemberVersion) != m.Version || b.Trained {
				t.Fatalf("step %d rollout %s role B = %+v: want a league member, untrained", step, x.RolloutID, b)
			}
			if m.Version > step-1 {
				t.Errorf("step %d drew snapshot %d, newer than the policy that sampled it", step, m.Version)
			}
			if m.Version > 0 && b.Model != fmt.Sprintf("p-%s-%06d", mustState(t, dir).Nonce, m.Version) {
				t.Errorf("step %d: snapshot %d played by %q", step, m.Version, b.Model)
			}
		}
	}
	if r.LoadsTotal != loads {
		t.Errorf("%d loads in all, want %d", r.LoadsTotal, loads)
	}
	ms := readMetrics(t, dir)
	for _, k := range []string{"league/loads", "league/unloads", "league/members", "league/rating/B", "league/rd/B"} {
		if _, ok := ms[3][k]; !ok {
			t.Errorf("metrics line of step 4 lacks %s: %v", k, ms[3])
		}
	}

	// A member whose adapter is gone is named and skipped (DONE stays, so
	// the step is not trained again).
	if err := os.Remove(filepath.Join(dir.CheckpointDir(2), "adapter_model.safetensors")); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	if _, err := trained(t, dir, url, 5, 0, withLeague, func(o *train.LoopOptions) { o.Logger = zap.New(core) }); err != nil {
		t.Fatal(err)
	}
	w := logs.FilterMessageSnippet("league member skipped")
	if w.Len() == 0 || w.All()[0].ContextMap()["member"] != "snapshot-000002" {
		t.Errorf("warnings %v, want one naming snapshot-000002", logs.All())
	}
	if m := readLeague(t, dir, 5).Role("B").Member("snapshot-000002"); m.StepDrawn != 0 || !strings.Contains(m.Skipped, dir.CheckpointDir(2)) {
		t.Errorf("snapshot 2 after its folder went: %+v", m)
	}
}

func mustState(t *testing.T, dir dataset.RunDir) train.State {
	t.Helper()
	st, _, err := train.LoadState(dir.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLeagueOtherRun: ratings written by another run are refused, naming
// the file.
func TestLeagueOtherRun(t *testing.T) {
	url := simURL(t)
	dir := dataset.RunDir(t.TempDir())
	if _, err := trained(t, dir, url, 1, 0, withLeague); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dir.LeaguePath(1))
	os.WriteFile(dir.LeaguePath(1), bytes.Replace(b, []byte(`"run_id": "t"`), []byte(`"run_id": "other"`), 1), 0o644)
	opts := loopOptions(t, dir, nil, 2, 0)
	withLeague(&opts)
	_, err := train.NewLoop(opts)
	if err == nil || !strings.Contains(err.Error(), dir.LeaguePath(1)) || !strings.Contains(err.Error(), `run "other"`) {
		t.Errorf("NewLoop over another run's league = %v", err)
	}
}

// TestLeagueCrashPoints is the child of TestLeagueSIGKILL.
func TestLeagueCrashPoints(t *testing.T) {
	dir, url := os.Getenv("PARLEY_TEST_LEAGUE_DIR"), os.Getenv("PARLEY_TEST_CRASH_URL")
	if dir == "" {
		t.Skip("child of TestLeagueSIGKILL")
	}
	ft := &fakeTrainer{dir: dataset.RunDir(dir), consumed: map[int]int{}, versions: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ft.run(ctx)
	opts := func(o *train.LoopOptions) {
		withLeague(o)
		o.MaxStaleness, o.Stream = 1, os.Getenv("PARLEY_TEST_LEAGUE_STREAM") != ""
	}
	if err := newLoopClient(t, dataset.RunDir(dir), llmOpts(url), 4, 1, opts).Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeagueSIGKILL kills a league run with SIGKILL inside the league
// file's write, after it (before the batch), between DONE and the state and
// inside the state write, then resumes: the league after the last step is
// the one an uninterrupted run leaves, byte for byte.
func TestLeagueSIGKILL(t *testing.T) {
	url := simURL(t)
	ref := dataset.RunDir(t.TempDir())
	fixNonce(t, ref)
	ft := &fakeTrainer{dir: ref, consumed: map[int]int{}, versions: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	go ft.run(ctx)
	err := newLoopClient(t, ref, llmOpts(url), 4, 1, func(o *train.LoopOptions) { withLeague(o); o.MaxStaleness = 1 }).Run(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	dir := dataset.RunDir(t.TempDir())
	fixNonce(t, dir)
	kills := killAtPoints(t, "TestLeagueCrashPoints", []string{"PARLEY_TEST_LEAGUE_DIR=" + dir.Root(), "PARLEY_TEST_CRASH_URL=" + url},
		"league-write:2", "before-batch:1", "after-done:2", "league-write:1", "state-write:2")
	if kills < 3 {
		t.Fatalf("%d kills landed, want at least 3", kills)
	}
	for step := 1; step <= 4; step++ {
		a, b := leagueJSON(t, ref, step), leagueJSON(t, dir, step)
		if a != b {
			t.Errorf("league after step %d differs from the uninterrupted run's (%d kills):\n%s\nwant\n%s", step, kills, b, a)
		}
	}
	t.Logf("%d kills", kills)

	// Streaming, the groups in flight differ from run to run: every step
	// is trained once, no group is in two batches, and the league after
	// each step counts the draws of its batch's groups and rates them.
	dir = dataset.RunDir(t.TempDir())
	fixNonce(t, dir)
	kills = killAtPoints(t, "TestLeagueCrashPoints", []string{"PARLEY_TEST_LEAGUE_DIR=" + dir.Root(), "PARLEY_TEST_CRASH_URL=" + url, "PARLEY_TEST_LEAGUE_STREAM=1"},
		"stream-taken:2", "group-journaled:3", "league-write:2", "before-batch-journal:1", "after-done:2")
	if kills < 3 {
		t.Fatalf("streaming: %d kills landed, want at least 3", kills)
	}
	checkGroupsOnce(t, dir, 4, 4)
	for step := 1; step <= 4; step++ {
		r := readLeague(t, dir, step).Role("B")
		drawn, total := 0, 0
		for _, m := range r.Members {
			drawn, total = drawn+m.StepDrawn, total+m.Drawn
		}
		if drawn != 4 || total != 4*step || len(r.History) != step {
			t.Errorf("streaming, after %d kills: league after step %d counts %d draws (%d in all), %d history points; want 4 (%d), %d",
				kills, step, drawn, total, len(r.History), 4*step, step)
		}
	}
}

// leagueJSON is dir's league after step with the adapter paths made
// relative to the run directory.
func leagueJSON(t *testing.T, dir dataset.RunDir, step int) string {
	t.Helper()
	s := readLeague(t, dir, step)
	abs, _ := filepath.Abs(dir.Root())
	for _, r := range s.Roles {
		for i := range r.Members {
			r.Members[i].Path = strings.TrimPrefix(r.Members[i].Path, abs)
		}
	}
	b, _ := json.MarshalIndent(s, "", " ")
	return string(b)
}

// TestCrossPlayBeside: train.crossplay_every plays cross-play beside
// training at every multiple (the newest waiting one when it falls
// behind), waits for it at the end, and a resumed run queues the newest
// multiple already trained again; step by step and streaming.
func TestCrossPlayBeside(t *testing.T) {
	url := simURL(t)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) { crossPlayBeside(t, url, stream) })
	}
}

// crossPlayBeside is TestCrossPlayBeside, step by step or streaming
// (staleness 1).
func crossPlayBeside(t *testing.T, url string, stream bool) {
	dir := dataset.RunDir(t.TempDir())
	k := 0
	if stream {
		k = 1
	}
	var mu sync.Mutex
	var played []int
	xp := func(o *train.LoopOptions) {
		o.CrossPlay = train.CrossPlayOptions{Every: 2, Play: func(_ context.Context, step int) error {
			if _, ok, _ := handshake.ReadDone(dir.CheckpointDir(step)); !ok {
				t.Errorf("cross-play up to step %d before its checkpoint", step)
			}
			mu.Lock()
			played = append(played, step)
			mu.Unlock()
			return nil
		}}
		o.Stream = stream
	}
	if _, err := trained(t, dir, url, 4, k, xp); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(played)
	mu.Unlock()
	if len(got) == 0 || got[len(got)-1] != 4 || slices.ContainsFunc(got, func(s int) bool { return s%2 != 0 }) {
		t.Errorf("cross-play ran up to steps %v, want multiples of 2 ending with 4", got)
	}
	played = nil
	if _, err := trained(t, dir, url, 5, k, xp); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(played, []int{4}) {
		t.Errorf("resumed run's cross-play %v, want step 4 again (resumable)", played)
	}
}
