package league

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/stats"
)

// role is a league of two frozen members and snapshots 0..pv.
func role(t *testing.T, pv int, o Options) *Role {
	t.Helper()
	s := New("run", []string{"requester"})
	r := s.Role("requester")
	r.Join(1, pv, 2, o)
	return r
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		k, pv int
		want  []string
	}{
		{1, 0, []string{"pool[0]", "pool[1]", "snapshot-000000"}},
		{1, 2, []string{"pool[0]", "pool[1]", "snapshot-000000", "snapshot-000001", "snapshot-000002"}},
		{3, 7, []string{"pool[0]", "pool[1]", "snapshot-000000", "snapshot-000003", "snapshot-000006"}},
	} {
		r := role(t, tc.pv, Options{SnapshotEvery: tc.k})
		var got []string
		for _, m := range r.Members {
			got = append(got, m.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Join(K %d, version %d) = %v, want %v", tc.k, tc.pv, got, tc.want)
		}
	}
	// A snapshot joins with the trained policy's rating and RD 350.
	r := role(t, 0, Options{})
	r.Trained = stats.Glicko2Rating{R: 1620, RD: 80, Sigma: 0.06}
	r.Join(2, 1, 2, Options{})
	if m := r.Member(SnapshotID(1)); m == nil || m.Rating.R != 1620 || m.Rating.RD != stats.Glicko2RD || m.JoinedStep != 2 {
		t.Errorf("snapshot 1 joined as %+v, want R 1620, RD 350, step 2", m)
	}
}

func TestDraw(t *testing.T) {
	o := Options{}
	r := role(t, 3, o)
	a, err := r.Draw(o, 7, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Draw(o, 7, 4, 64)
	c, _ := r.Draw(o, 7, 5, 64)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("draws: the same seed and step must repeat, another step differ: %v %v %v", a, b, c)
	}
	seen := map[string]bool{}
	for _, id := range a {
		seen[id] = true
	}
	if len(seen) < 5 {
		t.Errorf("uniform over 6 members drew only %v in 64 groups", seen)
	}

	latest := Options{Draw: DrawLatest}
	if got, _ := r.Draw(latest, 7, 4, 8); slices.ContainsFunc(got, func(id string) bool { return id != SnapshotID(3) }) {
		t.Errorf("latest drew %v, want snapshot 3 only", got)
	}

	// pfsp: (1 − p)² with p from the ratings, a member the policy beats
	// surely never drawn.
	pfsp := Options{Draw: DrawPFSP}
	for i := range r.Members {
		r.Members[i].WinProb = 1
	}
	r.Members[1].WinProb = 0.5
	r.Members[4].WinProb = 0.8
	w := r.Weights(pfsp)
	want := []float64{0, 0.25 / 0.29, 0, 0, 0.04 / 0.29, 0}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-12 {
			t.Errorf("pfsp weights %v, want %v", w, want)
			break
		}
	}

	r.Members[1].Skipped = "adapter gone"
	for _, id := range mustDraw(t, r, pfsp) {
		if id != r.Members[4].ID {
			t.Errorf("pfsp with pool[1] skipped drew %s", id)
		}
	}
	for i := range r.Members {
		r.Members[i].Skipped = "gone"
	}
	if _, err := r.Draw(o, 1, 1, 1); err == nil || !strings.Contains(err.Error(), "no member can play") {
		t.Errorf("Draw with every member skipped = %v", err)
	}
}

func mustDraw(t *testing.T, r *Role, o Options) []string {
	t.Helper()
	d, err := r.Draw(o, 3, 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRate(t *testing.T) {
	o := Options{}
	r := role(t, 1, o)
	before := r.Trained
	idle := r.Member("pool[1]").Rating
	idle.RD = 100
	r.Member("pool[1]").Rating = idle
	games := []Game{{"pool[0]", 1}, {"pool[0]", 1}, {"snapshot-000001", 1}, {"snapshot-000001", 0.5}}
	r.Rate(1, 0, games, o)
	if r.Trained.R <= before.R || r.Trained.RD >= before.RD {
		t.Errorf("trained after wins %+v, want up from %+v with a smaller RD", r.Trained, before)
	}
	if m := r.Member("pool[0]"); m.Rating.R >= 1500 || m.Games != 2 {
		t.Errorf("pool[0] after two losses %+v", m)
	}
	if m := r.Member("pool[1]"); m.Rating.R != idle.R || m.Rating.RD <= idle.RD {
		t.Errorf("idle pool[1] %+v, want its rating kept and its RD grown from %v", m.Rating, idle.RD)
	}
	if m := r.Member("pool[0]"); m.WinProb <= 0.5 {
		t.Errorf("win probability against a beaten member %v", m.WinProb)
	}
	if len(r.History) != 1 || r.History[0].R != r.Trained.R {
		t.Errorf("history %v", r.History)
	}
}

func TestSaveLoad(t *testing.T) {
	dir := dataset.RunDir(t.TempDir())
	s := New("run-a", []string{"requester"})
	s.Role("requester").Join(1, 0, 1, Options{})
	s.Step = 1
	if err := Save(dir.LeaguePath(1), s); err != nil {
		t.Fatal(err)
	}
	got, err := LoadBefore(dir, "run-a", 2, []string{"requester"})
	if err != nil || got.Step != 1 || len(got.Role("requester").Members) != 2 {
		t.Fatalf("LoadBefore(2) = %+v, %v", got, err)
	}
	if fresh, err := LoadBefore(dir, "run-a", 1, []string{"requester"}); err != nil || fresh.Step != 0 || len(fresh.Role("requester").Members) != 0 {
		t.Errorf("LoadBefore(1) = %+v, %v, want a new league", fresh, err)
	}
	for _, tc := range []struct {
		name, body, run, want string
	}{
		{"another run", "", "run-b", `holds the ratings of run "run-a", not of this run "run-b"`},
		{"does not parse", "{\"version\": 1, \"run_id\": ", "run-a", "step-000001.json does not parse"},
		{"unknown field", `{"version": 1, "run_id": "run-a", "rating": 3}`, "run-a", "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.body != "" {
				os.WriteFile(dir.LeaguePath(1), []byte(tc.body), 0o644)
			}
			_, _, err := Load(dir.LeaguePath(1), tc.run)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want %q", err, tc.want)
			}
		})
	}
	if _, ok, err := Load(filepath.Join(t.TempDir(), "none.json"), "x"); ok || err != nil {
		t.Errorf("Load(missing) = %v, %v", ok, err)
	}
}

// loader is a fake adapter loader: failing names fail to load.
type loader struct {
	loaded  map[string]bool
	calls   []string
	failing map[string]bool
}

func (l *loader) LoadLoRA(_ context.Context, name, _ string) error {
	l.calls = append(l.calls, "load "+name)
	if l.failing[name] {
		return errors.New("404 adapter not found")
	}
	l.loaded[name] = true
	return nil
}

func (l *loader) UnloadLoRA(_ context.Context, name string) error {
	l.calls = append(l.calls, "unload "+name)
	delete(l.loaded, name)
	return nil
}

func TestServeLRU(t *testing.T) {
	o := Options{MaxLoaded: 2}
	r := role(t, 4, o)
	for i := range r.Members {
		if m := &r.Members[i]; m.Kind == KindSnapshot && m.Version > 0 {
			m.Model, m.Path = "a"+m.ID, "/ck/"+m.ID
		}
	}
	ld := &loader{loaded: map[string]bool{}, failing: map[string]bool{"asnapshot-000004": true}}
	steps := []struct {
		draws         []string
		loads, unload int
		loaded        []string
	}{
		{[]string{"snapshot-000001", "pool[0]", "snapshot-000001"}, 1, 0, []string{"asnapshot-000001"}},
		{[]string{"snapshot-000002"}, 1, 0, []string{"asnapshot-000001", "asnapshot-000002"}},
		{[]string{"snapshot-000003", "snapshot-000002"}, 1, 1, []string{"asnapshot-000002", "asnapshot-000003"}},
		{[]string{"snapshot-000001", "snapshot-000002", "snapshot-000003"}, 1, 0, []string{"asnapshot-000001", "asnapshot-000002", "asnapshot-000003"}},
	}
	for i, st := range steps {
		r.Loads, r.Unloads = 0, 0
		failed, warns := r.Serve(context.Background(), ld, i+1, st.draws, o, "")
		if failed != nil || warns != nil {
			t.Fatalf("step %d: failed %v, warnings %v", i+1, failed, warns)
		}
		var got []string
		for _, s := range r.Loaded {
			got = append(got, s.Model)
		}
		slices.Sort(got)
		if r.Loads != st.loads || r.Unloads != st.unload || !slices.Equal(got, st.loaded) {
			t.Errorf("step %d: loads %d unloads %d loaded %v, want %d %d %v", i+1, r.Loads, r.Unloads, got, st.loads, st.unload, st.loaded)
		}
	}
	// An adapter that does not load is named and skipped.
	failed, _ := r.Serve(context.Background(), ld, 5, []string{"snapshot-000004"}, o, "")
	if !slices.Equal(failed, []string{"snapshot-000004"}) || !strings.Contains(r.Member("snapshot-000004").Skipped, "asnapshot-000004 from /ck/snapshot-000004 does not load") {
		t.Errorf("failed %v, skipped %q", failed, r.Member("snapshot-000004").Skipped)
	}
	// The trained policy's adapter is never unloaded by the league.
	r.Loads, r.Unloads = 0, 0
	r.Serve(context.Background(), ld, 6, []string{"snapshot-000001"}, Options{MaxLoaded: 1}, "asnapshot-000002")
	if slices.Contains(ld.calls, "unload asnapshot-000002") {
		t.Errorf("the served policy's adapter was unloaded: %v", ld.calls)
	}
}
