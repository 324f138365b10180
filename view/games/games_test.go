package games_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/view/games"
)

// TestScan: each kind of output is found, at the directory itself and
// one level down; a folder of none finds none; a missing one is an error
// naming it.
func TestScan(t *testing.T) {
	f := shared(t)
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{f.Root, []string{"compare", "compare", "league", "series", "tournament"}},
		{f.Tournament, []string{"tournament"}},
		{f.Series, []string{"series"}},
		{f.Run, []string{"compare", "league"}},
		{t.TempDir(), nil},
	} {
		found, err := games.Scan(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, x := range found {
			kinds = append(kinds, x.Kind)
			if !strings.HasPrefix(x.Route, "#/g/"+x.Kind+"/") {
				t.Errorf("%s: route %q", x.Dir, x.Route)
			}
		}
		sort.Strings(kinds)
		if strings.Join(kinds, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Scan(%s) = %v, want %v", tc.dir, kinds, tc.want)
		}
	}
	if _, err := games.Scan(filepath.Join(f.Root, "nope")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Scan of a missing folder: %v, want an error naming it", err)
	}
}

// analysis is seed 001's own analysis of the tournament in dir, as its
// report computes it.
func analysis(t *testing.T, dir string) *endowment.Analysis {
	t.Helper()
	b, err := tournament.ReadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := config.ParseTournament(b)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := tournament.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := rollout.TournamentReport{Section: s.Game, Analysis: s.Analysis, Seed: s.Seed, Rounds: s.Rounds,
		Schedule: s.Schedule, Conditions: s.Conditions, Scheduled: len(recs)}
	for _, a := range s.Agents {
		in.Agents = append(in.Agents, rollout.TournamentAgent{Name: a.Name, Family: a.Family, OpenWeights: a.OpenWeights})
	}
	for i := range recs {
		in.Games = append(in.Games, recs[i].Game())
	}
	a, err := endowment.AnalyzeTournament(in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTournamentMatrix: every cell of the holder × requester matrix is
// the mean share and game count seed 001's analysis computes for it, and
// the holders and requesters are in its order.
func TestTournamentMatrix(t *testing.T) {
	f := shared(t)
	m, err := games.ReadTournament(f.Tournament)
	if err != nil {
		t.Fatal(err)
	}
	a := analysis(t, f.Tournament)
	if m.Seats != [2]string{"holder", "requester"} || len(m.Errors) != 0 || m.Games != a.Played {
		t.Fatalf("seats %v, errors %v, games %d (analysis played %d)", m.Seats, m.Errors, m.Games, a.Played)
	}
	index := map[string]int{}
	for i, ag := range a.Agents {
		index[ag.Name] = i
	}
	cells := 0
	for i, h := range m.Rows {
		for j, r := range m.Cols {
			want, n := a.Share[index[h]][index[r]], a.Count[index[h]][index[r]]
			got := m.Value[i][j]
			switch {
			case m.Count[i][j] != n:
				t.Errorf("cell %s × %s: %d games, analysis %d", h, r, m.Count[i][j], n)
			case math.IsNaN(want) != (got == nil):
				t.Errorf("cell %s × %s: %v, analysis %v", h, r, got, want)
			case got != nil && math.Abs(*got-want) > 1e-12:
				t.Errorf("cell %s × %s: %v, analysis %v", h, r, *got, want)
			case got != nil:
				cells++
			}
		}
	}
	if cells == 0 {
		t.Fatal("no cell compared")
	}
	for _, tc := range []struct {
		name      string
		got       []string
		wantOrder []int
	}{{"holders", m.Rows, a.HolderOrder}, {"requesters", m.Cols, a.RequesterOrder}} {
		var want []string
		for _, i := range tc.wantOrder {
			want = append(want, a.Agents[i].Name)
		}
		if strings.Join(tc.got, ",") != strings.Join(want, ",") {
			t.Errorf("%s in order %v, analysis %v", tc.name, tc.got, want)
		}
	}
}

// TestTournamentCell: a cell holds exactly the games of its pairing, each
// with the game's turns and its ledger entry per holder turn as recorded.
func TestTournamentCell(t *testing.T) {
	f := shared(t)
	recs, err := tournament.ReadRecords(f.Tournament)
	if err != nil {
		t.Fatal(err)
	}
	byPair := map[[2]string][]tournament.Record{}
	for _, r := range recs {
		byPair[r.Match.Seats] = append(byPair[r.Match.Seats], r)
	}
	if len(byPair) < 12 {
		t.Fatalf("%d pairings", len(byPair))
	}
	for pair, want := range byPair {
		c, err := games.ReadCell(f.Tournament, pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Games) != len(want) {
			t.Fatalf("cell %v: %d games, want %d", pair, len(c.Games), len(want))
		}
		for i, g := range c.Games {
			o, err := endowment.RolloutOutcome(&want[i].Rollout)
			if err != nil {
				t.Fatal(err)
			}
			if g.ID != want[i].Match.ID || len(g.Turns) != len(want[i].Rollout.Turns) || len(g.Ledger) != len(o.Ledger) || len(o.Ledger) == 0 {
				t.Fatalf("cell %v game %s: %d turns, %d ledger entries; want %s, %d, %d", pair, g.ID, len(g.Turns), len(g.Ledger), want[i].Match.ID, len(want[i].Rollout.Turns), len(o.Ledger))
			}
			for k, raw := range g.Ledger {
				var e endowment.Entry
				if err := json.Unmarshal(raw, &e); err != nil || e.Turn != o.Ledger[k].Turn || e.Moved != o.Ledger[k].Moved || e.BalanceAfter != o.Ledger[k].BalanceAfter {
					t.Errorf("cell %v game %s ledger %d: %+v (%v), want %+v", pair, g.ID, k, e, err, o.Ledger[k])
				}
			}
			if g.Value == nil || *g.Value != o.Share {
				t.Errorf("game %s value %v, want share %v", g.ID, g.Value, o.Share)
			}
		}
	}
	if _, err := games.ReadCell(f.Tournament, "", "x"); err == nil || !strings.Contains(err.Error(), "row and col") {
		t.Errorf("a cell without row: %v", err)
	}
}

// TestSeries: each series' games in order, with each party's trust in
// the others after each game equal to the state the series recorded, and
// the adversary marked as the game's outcome names it.
func TestSeries(t *testing.T) {
	f := shared(t)
	s, err := games.ReadSeries(f.Series)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Series) == 0 || len(s.Errors) != 0 {
		t.Fatalf("%d series, errors %v", len(s.Series), s.Errors)
	}
	for _, one := range s.Series {
		recs, err := rollout.ReadSeries(filepath.Join(f.Series, "series"), one.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Games) != len(recs) || len(recs) != 3 {
			t.Fatalf("series %s: %d games, recorded %d (want 3)", one.ID, len(one.Games), len(recs))
		}
		for i, g := range one.Games {
			var st struct {
				Trust map[string]map[string]float64 `json:"trust"`
			}
			if err := json.Unmarshal(recs[i].State, &st); err != nil {
				t.Fatal(err)
			}
			if g.Index != i || len(st.Trust) == 0 || !sameTrust(g.Trust, st.Trust) {
				t.Errorf("series %s game %d (index %d): trust %v, recorded %v", one.ID, i, g.Index, g.Trust, st.Trust)
			}
			var o struct {
				Kinds map[string]string `json:"kinds"`
			}
			json.Unmarshal([]byte(recs[i].Rollout.Outcome), &o)
			if o.Kinds[one.Adversary] != "adversary" {
				t.Errorf("series %s: adversary %q, kinds %v", one.ID, one.Adversary, o.Kinds)
			}
		}
	}
}

func sameTrust(a, b map[string]map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i, row := range b {
		if len(a[i]) != len(row) {
			return false
		}
		for j, v := range row {
			if a[i][j] != v {
				return false
			}
		}
	}
	return true
}

// TestLeague: members and the rating history are the league file's; the
// cross-play matrix is league.AnalyseCrossPlay's over the cross-play's
// games, as app's league report computes it.
func TestLeague(t *testing.T) {
	f := shared(t)
	l, err := games.ReadLeague(f.Run)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := league.Load(dataset.RunDir(f.Run).LeaguePath(4), "xp")
	if err != nil {
		t.Fatal(err)
	}
	if l.Step != 4 || len(l.Roles) != 1 || len(l.Errors) != 0 {
		t.Fatalf("league step %d, %d roles, errors %v", l.Step, len(l.Roles), l.Errors)
	}
	r := l.Roles[0]
	if len(r.History) != len(st.Roles[0].History) || r.History[3] != st.Roles[0].History[3] || len(r.Members) != 2 || r.Members[1].Rating.RD != 150 {
		t.Errorf("role %+v, want the league file's %+v", r, st.Roles[0])
	}
	// The frozen member's rating at each kept league file.
	mh := r.MemberHistory[league.FrozenID(0)]
	if len(mh) != 2 || mh[0] != (league.Point{Step: 2, R: 1450, RD: 150}) || mh[1] != (league.Point{Step: 4, R: 1500, RD: 100}) {
		t.Errorf("pool[0]'s ratings over training %+v, want the league files' (1450 ± 150 at step 2, 1500 ± 100 at step 4)", mh)
	}
	if len(l.CrossPlay) != 1 || l.CrossPlay[0].Name != "step-000004" {
		t.Fatalf("cross-play %+v", l.CrossPlay)
	}
	xp := filepath.Join(f.Run, "crossplay", "step-000004")
	recs, err := tournament.ReadRecords(xp)
	if err != nil {
		t.Fatal(err)
	}
	var gs []league.CrossGame
	agents := map[string]bool{}
	for _, rec := range recs {
		gs = append(gs, league.CrossGame{Seats: rec.Match.Seats, Failed: rec.Failed || !rec.Rollout.Judged, Score: float64(rec.Rollout.Score)})
		agents[rec.Match.Seats[0]], agents[rec.Match.Seats[1]] = true, true
	}
	m := l.CrossPlay[0].Matrix
	cp := league.AnalyseCrossPlay(m.Agents, [2]string{"holder", "requester"}, gs, false)
	if strings.Join(cp.Rows, ",") != strings.Join(m.Rows, ",") || strings.Join(cp.Cols, ",") != strings.Join(m.Cols, ",") || cp.Games != m.Games || cp.Games == 0 {
		t.Fatalf("rows %v cols %v games %d, league's %v %v %d", m.Rows, m.Cols, m.Games, cp.Rows, cp.Cols, cp.Games)
	}
	for i := range cp.Rows {
		for j := range cp.Cols {
			w, g := cp.Matrix[i][j], m.Value[i][j]
			if math.IsNaN(w) != (g == nil) || (g != nil && math.Abs(*g-w) > 1e-6) {
				t.Errorf("cross-play %s × %s: %v, league's %v", cp.Rows[i], cp.Cols[j], g, w)
			}
		}
	}
}

// TestCompare: the same held-out prompt under each evaluated checkpoint,
// with both sides' completions and the verdicts of both orders.
func TestCompare(t *testing.T) {
	f := shared(t)
	c, err := games.ReadCompare(f.Run)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Steps) != 2 || c.Steps[0].Step != 2 || *c.Steps[1].WinRate != 0.5 || strings.Join(c.Prompts, ",") != "dilemma-01,dilemma-02" {
		t.Fatalf("compare %+v", c)
	}
	p, err := games.ReadComparePrompt(f.Run, "dilemma-02")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step, final string
		left, right int
	}{{"2", "step 2's answer to dilemma-02", 1, 1}, {"4", "step 4's answer to dilemma-02", 2, 0}} {
		cs := p.Steps[tc.step]
		if len(cs) != 1 || cs[0].LeftFinal != tc.final || cs[0].LeftWins != tc.left || cs[0].RightWins != tc.right || cs[0].RightFirstRationale == "" {
			t.Errorf("step %s: %+v", tc.step, cs)
		}
	}
	if _, err := games.ReadComparePrompt(f.Run, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown prompt: %v", err)
	}
}

// TestAPI: every URL the export would snapshot answers JSON; unknown ids
// and bad cells are errors that say what was looked for; no secret of the
// environment appears in any answer.
func TestAPI(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	f := shared(t)
	found, err := games.Scan(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(games.Handler(found))
	defer srv.Close()
	urls, err := games.URLs(found)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, u := range urls {
		code, body := get(t, srv.URL+u)
		if code != 200 || !json.Valid([]byte(body)) {
			t.Errorf("GET %s: %d %.200s", u, code, body)
		}
		if strings.Contains(body, "sk-test-secret") {
			t.Errorf("GET %s shows the environment's secret", u)
		}
		kinds[strings.SplitN(u, "?", 2)[0]]++
	}
	if len(kinds) != 7 || kinds["/api/games/tournament/games"] < 12 || kinds["/api/games/league/games"] != 6 {
		t.Errorf("URLs by path %v", kinds)
	}
	for _, tc := range []struct {
		url  string
		code int
		want string
	}{
		{"/api/games/tournament?id=nope", 404, `no tournament output with id \"nope\"`},
		{"/api/games/series?id=" + idOf(t, found, "tournament"), 404, "no series output"},
		{"/api/games/tournament/games?id=" + idOf(t, found, "tournament") + "&row=x", 400, "row and col"},
		{"/api/games/league/games?id=" + idOf(t, found, "league") + "&xp=..%2Fx&row=a&col=b", 400, "not a cross-play"},
		{"/api/games/compare/prompt?id=" + idOf(t, found, "compare"), 400, "prompt"},
		{"/api/games/other", 404, "no games API"},
	} {
		code, body := get(t, srv.URL+tc.url)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %s, want %d with %q", tc.url, code, body, tc.code, tc.want)
		}
	}
}

func idOf(t *testing.T, found []games.Found, kind string) string {
	for _, f := range found {
		if f.Kind == kind {
			return f.Route[strings.LastIndex(f.Route, "/")+1:]
		}
	}
	t.Fatalf("no %s found", kind)
	return ""
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCorruptFiles: a truncated record (game, series game, league file,
// evaluation) is named in the JSON's errors and skipped; the rest is
// still read.
func TestCorruptFiles(t *testing.T) {
	f := shared(t)
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(f.Root)); err != nil {
		t.Fatal(err)
	}
	tour, ser, run := filepath.Join(root, "tour"), filepath.Join(root, "ser"), filepath.Join(root, "run")
	seriesDir, _ := filepath.Glob(filepath.Join(ser, "series", "*", "game-000001.json"))
	gamesDir, _ := filepath.Glob(filepath.Join(tour, "games", "*.json"))
	for _, tc := range []struct {
		name, file string
		read       func() ([]string, int, error)
		want       int
	}{
		{"tournament game", gamesDir[0], func() ([]string, int, error) {
			m, err := games.ReadTournament(tour)
			if err != nil {
				return nil, 0, err
			}
			return m.Errors, m.Games, nil
		}, len(gamesDir) - 1},
		{"series game", seriesDir[0], func() ([]string, int, error) {
			s, err := games.ReadSeries(ser)
			if err != nil {
				return nil, 0, err
			}
			n := 0
			for _, x := range s.Series {
				n += len(x.Games)
			}
			return s.Errors, n, nil
		}, 3*len(seriesDir) - 1},
		{"league file", dataset.RunDir(run).LeaguePath(4), func() ([]string, int, error) {
			l, err := games.ReadLeague(run)
			if err != nil {
				return nil, 0, err
			}
			return l.Errors, l.Step, nil
		}, 2},
		{"evaluation", dataset.RunDir(run).EvalPath(4), func() ([]string, int, error) {
			c, err := games.ReadCompare(run)
			if err != nil {
				return nil, 0, err
			}
			return c.Errors, len(c.Steps), nil
		}, 1},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tc.file, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		errs, n, err := tc.read()
		if err != nil {
			t.Errorf("%s: %v, want the file skipped", tc.name, err)
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0], tc.file) || n != tc.want {
			t.Errorf("%s: errors %v, %d read; want %s named and %d read", tc.name, errs, n, tc.file, tc.want)
		}
	}
	// Unfinished atomic writes are not read.
	os.WriteFile(filepath.Join(tour, "games", ".x.json.tmp-123"), []byte("{"), 0o644)
	if m, err := games.ReadTournament(tour); err != nil || len(m.Errors) != 1 {
		t.Errorf("a temporary file: %v %v", err, m.Errors)
	}
	// The API names the file too.
	found, _ := games.Scan(root)
	srv := httptest.NewServer(games.Handler(found))
	defer srv.Close()
	code, body := get(t, srv.URL+"/api/games/tournament?id="+idOf(t, found, "tournament"))
	if code != 200 || !strings.Contains(body, filepath.Base(gamesDir[0])) {
		t.Errorf("API on a corrupt game: %d %.300s", code, body)
	}
}

// TestComparePairwise: an `eval pairwise --details` file is found beside
// its results, its sides named from them, and each prompt's comparisons
// are the file's, with the verdicts of both orders.
func TestComparePairwise(t *testing.T) {
	f := shared(t)
	found, err := games.Scan(filepath.Dir(f.Pairwise))
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Kind != "compare" || found[0].Dir != f.Pairwise {
		t.Fatalf("found %+v, want the details file", found)
	}
	c, err := games.ReadCompare(f.Pairwise)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Pairwise || c.Left != "ca-lora" || c.Right != "base" || len(c.Prompts) != 2 || len(c.Errors) != 0 {
		t.Fatalf("compare %+v", c)
	}
	b, err := os.ReadFile(f.Pairwise)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	n := 0
	for _, p := range c.Prompts {
		cp, err := games.ReadComparePrompt(f.Pairwise, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range cp.Steps {
			for _, x := range cs {
				n++
				if x.PromptID != p || x.LeftWins+x.RightWins+x.Ties != 2 || x.LeftFinal == "" || x.RightFinal == "" {
					t.Errorf("prompt %s: %+v, want both orders' verdicts and both finals", p, x)
				}
			}
		}
	}
	if n != len(lines) {
		t.Errorf("%d comparisons read, the file has %d", n, len(lines))
	}
}
