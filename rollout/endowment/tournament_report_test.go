package endowment_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/golden"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/endowment"
)

// The tournament fixture (testdata/tournament/games.jsonl) is a round
// robin of four agents, each ordered pairing once under each framing (24
// games), plus one failed game; two more games are scheduled and not
// played. Its shares are made by hand:
//
//	share = base(holder) + pull(requester) + .02 if group framing
//
// with base anchor 0 (it never gives, whatever is asked), wary .10, soft
// .50, open .85 and pull anchor 0, wary 0, soft .05, open .10. Anchor and
// wary refuse on turn 1 (wary gives half by turn 2 and the rest by turn
// 3), soft gives half on turn 1 and the rest on turn 2, open everything
// it gives on turn 1 and ends the game. One game (soft holding against
// anchor, singular) has an unparsed verdict. Singular requests
// individuate their cause (a name, an age, a pronoun), group requests do
// not; every requester but wary names a dollar amount.

// fixtureGames reads the fixture's recorded games.
func fixtureGames(t *testing.T) []rollout.TournamentGame {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "tournament", "games.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rollout.TournamentGame
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g rollout.TournamentGame
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("games.jsonl line %d: %v", len(out)+1, err)
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fixtureTournament is the report input of the fixture: the game's
// defaults with three holder turns, small resampling counts and two
// cohorts.
func fixtureTournament(t *testing.T) rollout.TournamentReport {
	t.Helper()
	cfg := endowment.DefaultConfig()
	cfg.MaxTurns = 3
	settings := endowment.DefaultTournamentSettings()
	a := &settings.Analysis
	a.Bootstrap, a.Splits, a.AuditDraws, a.EloPermutations = 100, 200, 100, 50
	settings.Cohorts = []endowment.Cohort{
		{Name: "no anchor holder", DropHolders: []string{"anchor"}},
		{Name: "without open", Drop: []string{"open"}},
	}
	in := rollout.TournamentReport{Name: "fixture", Dir: t.TempDir(), Section: cfg, Analysis: settings, Seed: 7, Rounds: 1,
		Schedule: "both", Conditions: []string{endowment.FramingSingular, endowment.FramingGroup}, Scheduled: 27,
		Games: fixtureGames(t), FilesSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	for _, n := range []string{"anchor", "wary", "soft", "open"} {
		in.Agents = append(in.Agents, rollout.TournamentAgent{Name: n, Family: "fixture", OpenWeights: n != "open"})
	}
	if err := settings.Validate([]string{"anchor", "wary", "soft", "open"}); err != nil {
		t.Fatal(err)
	}
	return in
}

func approx(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol
}

// TestAnalyzeTournamentFixture checks the analysis of the fixture against
// numbers derived by hand from its construction (see above).
func TestAnalyzeTournamentFixture(t *testing.T) {
	a, err := endowment.AnalyzeTournament(fixtureTournament(t))
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-9
	if a.Scheduled != 27 || a.Recorded != 25 || a.Played != 24 || a.Failed != 1 || a.Unparsed != 1 || a.GamesWithUnparsed != 1 || a.MaxTurns != 3 {
		t.Errorf("scheduled %d, recorded %d, played %d, failed %d, unparsed %d in %d games, turns %d; want 27, 25, 24, 1, 1 in 1, 3",
			a.Scheduled, a.Recorded, a.Played, a.Failed, a.Unparsed, a.GamesWithUnparsed, a.MaxTurns)
	}
	// Holders by what they gave: anchor 0, wary .16, soft .543, open
	// .877. Requesters by what they got: anchor (.11+.51+.86)/3 = .493,
	// wary (0+.51+.86)/3 = .457, soft (0+.16+.91)/3 = .357, open
	// (0+.21+.61)/3 = .273: generous holders meet the weak askers, so the
	// pull's order is not the yield's.
	for _, o := range []struct {
		name      string
		got, want []int
	}{{"HolderOrder", a.HolderOrder, []int{0, 1, 2, 3}}, {"RequesterOrder", a.RequesterOrder, []int{0, 1, 2, 3}}} {
		if len(o.got) != len(o.want) {
			t.Errorf("%s = %v, want %v", o.name, o.got, o.want)
			continue
		}
		for i := range o.want {
			if o.got[i] != o.want[i] {
				t.Errorf("%s = %v, want %v", o.name, o.got, o.want)
				break
			}
		}
	}
	// Cells: wary holding against soft .15 and .17; open against anchor
	// .85 and .87; anchor gives nothing; the diagonal was never played.
	for _, c := range []struct {
		h, r  int
		share float64
		count int
	}{{1, 2, .16, 2}, {3, 0, .86, 2}, {0, 3, 0, 2}, {2, 2, math.NaN(), 0}} {
		if !approx(a.Share[c.h][c.r], c.share, tol) || a.Count[c.h][c.r] != c.count {
			t.Errorf("cell %d, %d: share %v of %d games, want %v of %d", c.h, c.r, a.Share[c.h][c.r], a.Count[c.h][c.r], c.share, c.count)
		}
	}
	// Table 5 (percent). As holder: anchor and wary win every game (all
	// below .5); soft's .5 games are draws and the rest losses, open loses
	// all. As requester: anchor wins .52, .85, .87 (3 of 6); wary .52,
	// .85, .87 (3 of 6); soft .90, .92 (2); open .60, .62 (2).
	for i, w := range []struct {
		reqWin, reqGot, holdWin, holdGave float64
	}{
		{50, 100 * (.11 + .51 + .86) / 3, 100, 0},
		{50, 100 * (.51 + .86) / 3, 100, 16},
		{100.0 / 3, 100 * (.16 + .91) / 3, 0, 100 * (.51 + .51 + .61) / 3},
		{100.0 / 3, 100 * (.21 + .61) / 3, 0, 100 * (.86 + .86 + .91) / 3},
	} {
		r := a.Agents[i]
		if r.ReqGames != 6 || r.HoldGames != 6 || !approx(r.ReqWin, w.reqWin, tol) || !approx(r.ReqGot, w.reqGot, tol) ||
			!approx(r.HoldWin, w.holdWin, tol) || !approx(r.HoldGave, w.holdGave, tol) {
			t.Errorf("agent %s: %+v, want 6 games a role, requester win %.2f got %.2f, holder win %.2f gave %.2f", r.Name, r, w.reqWin, w.reqGot, w.holdWin, w.holdGave)
		}
	}
	// Elo: the holders that never lose rate above the ones that never win.
	if !(a.Agents[0].HoldElo > 1500 && a.Agents[1].HoldElo > 1500 && a.Agents[2].HoldElo < 1500 && a.Agents[3].HoldElo < 1500) {
		t.Errorf("holder Elo %v, %v, %v, %v: want the two refusers above 1500 and the two givers below",
			a.Agents[0].HoldElo, a.Agents[1].HoldElo, a.Agents[2].HoldElo, a.Agents[3].HoldElo)
	}
	// Table 7. Singular: 0 ×3, .10, .15, .20, .50, .50, .60, .85, .85,
	// .90: mean 4.65/12 = 38.75%, median (.20+.50)/2 = 35%, 4 wins in 12.
	// Group adds .02 to the nine games of a giving holder: mean 40.25%,
	// median 37%, 6 wins (.52 twice now counts).
	for i, w := range []endowment.FramingRow{
		{Framing: endowment.FramingSingular, Games: 12, Mean: 38.75, Median: 35, RequesterWin: 100.0 / 3},
		{Framing: endowment.FramingGroup, Games: 12, Mean: 40.25, Median: 37, RequesterWin: 50},
	} {
		g := a.Framing.Rows[i]
		if g.Framing != w.Framing || g.Games != w.Games || !approx(g.Mean, w.Mean, tol) || !approx(g.Median, w.Median, tol) || !approx(g.RequesterWin, w.RequesterWin, tol) {
			t.Errorf("framing row %d = %+v, want %+v", i, g, w)
		}
	}
	if a.Framing.Err != "" || !(a.Framing.D.D < 0) {
		t.Errorf("Cohen's d %v (%q): want a negative d (group transferred more)", a.Framing.D.D, a.Framing.Err)
	}
	// Figure 6: refusal rates 1, 1, 0, 0 rank 3.5, 3.5, 1.5, 1.5; shares
	// given rank 1–4; ρ = −4/√(4·5).
	rf := a.Refusal
	if want := -4 / math.Sqrt(20); rf.Err != "" || !approx(rf.Rho, want, tol) || len(rf.Holders) != 4 || rf.Splits != 200 {
		t.Errorf("refusal ρ %v (%q) over %v, %d splits; want %v over 4 holders, 200 splits", rf.Rho, rf.Err, rf.Holders, rf.Splits, want)
	}
	// Figure 7, dollars: wary 0, 8, 16; soft's turn-1 half of 54.33 and
	// then all of it; open all 87.67 from turn 1 (a game that ended keeps
	// its final amount). Over the 24 games: the four holders' mean.
	soft, open := 100*(.51+.51+.61)/3, 100*(.86+.86+.91)/3
	for i, w := range [][]float64{{0, 0, 0}, {0, 8, 16}, {soft / 2, soft, soft}, {open, open, open}} {
		for k := range w {
			if !approx(a.Cumulative[i][k], w[k], 1e-6) {
				t.Errorf("cumulative of %s = %v, want %v", a.Agents[i].Name, a.Cumulative[i], w)
				break
			}
		}
	}
	for k, w := range []float64{(soft/2 + open) / 4, (8 + soft + open) / 4, (16 + soft + open) / 4} {
		if !approx(a.CumulativeAll[k], w, 1e-6) {
			t.Errorf("CumulativeAll = %v, want turn %d %v", a.CumulativeAll, k+1, w)
		}
	}
	// Table 4: every game; anchor's six as holder left out; and open left
	// out of both roles, three agents whose six pairings are too few.
	for i, w := range []struct {
		name                       string
		games, holders, requesters int
		failed                     bool
	}{{"all agents", 24, 4, 4, false}, {"no anchor holder", 18, 3, 4, false}, {"without open", 12, 0, 0, true}} {
		c := a.Cohorts[i]
		if c.Name != w.name || c.Games != w.games || (c.Err != "") != w.failed || !w.failed && (c.Holders != w.holders || c.Requesters != w.requesters) {
			t.Errorf("cohort %d: %s, %d games, %d/%d agents, err %q; want %s, %d, %d/%d, failed %v", i, c.Name, c.Games, c.Holders, c.Requesters, c.Err, w.name, w.games, w.holders, w.requesters, w.failed)
		}
	}
	// The full budget: holder identity dominates.
	if b := a.Budget; b.Err != "" || b.Shares["holder"].Point < .8 {
		t.Errorf("budget %q, holder share %v; want most of the variance the holder's", b.Err, b.Shares["holder"].Point)
	}
	// Table 8's features: singular requests individuate, group ones do
	// not; three requesters of four name a dollar amount, in every game.
	for _, w := range []struct {
		name                 string
		all, singular, group float64
	}{{endowment.FeatIndividuation, .5, 1, 0}, {endowment.FeatDollarAsks, .75, .75, .75}} {
		var f *endowment.FeatureMeans
		for i := range a.Sequential.Features {
			if a.Sequential.Features[i].Name == w.name {
				f = &a.Sequential.Features[i]
			}
		}
		if f == nil || !approx(f.All, w.all, tol) || !approx(f.Singular, w.singular, tol) || !approx(f.Group, w.group, tol) {
			t.Errorf("feature %s = %+v, want %v, %v, %v", w.name, f, w.all, w.singular, w.group)
		}
	}
}

// TestAnalyzeTournamentRefuses: games the analysis cannot read are errors
// naming the game; a tournament with no game played is one too.
func TestAnalyzeTournamentRefuses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*rollout.TournamentReport)
		want   string
	}{
		{"every game failed", func(in *rollout.TournamentReport) {
			for i := range in.Games {
				in.Games[i].Failed = true
			}
		}, "endowment.AnalyzeTournament: no game was played"},
		{"an agent not in the spec", func(in *rollout.TournamentReport) { in.Games[0].Seats[1] = "stranger" },
			"endowment.AnalyzeTournament: game g1-anchor-open: agents anchor, stranger are not in the spec"},
		{"another game's rollout", func(in *rollout.TournamentReport) { in.Games[0].Rollout.Env = "multiparty" },
			`endowment.AnalyzeTournament: game g1-anchor-open: endowment: rollout g1-anchor-open is of game "multiparty"`},
		{"no outcome", func(in *rollout.TournamentReport) { in.Games[0].Rollout.Outcome = "" },
			"endowment.AnalyzeTournament: game g1-anchor-open: endowment: the rollout has no outcome"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := fixtureTournament(t)
			tt.mutate(&in)
			_, err := endowment.AnalyzeTournament(in)
			if err == nil || err.Error() != tt.want {
				t.Errorf("AnalyzeTournament() = %v, want %q", err, tt.want)
			}
			if _, _, err := endowment.TournamentHook.Report(in); err == nil {
				t.Error("the report was written anyway")
			}
		})
	}
}

// TestTournamentReportGolden renders the fixture's report, and two
// degenerate variants of it, and compares each with its golden file in
// testdata/tournament/ (go test -update rewrites them); the figures are
// written beside the report and its analysis is JSON (no NaN).
func TestTournamentReportGolden(t *testing.T) {
	for _, tt := range []struct {
		name, golden string
		mutate       func(*rollout.TournamentReport)
		figures      []string
	}{
		{name: "fixture", golden: "report.golden.md", figures: []string{endowment.FigShareMatrix, endowment.FigBudget, endowment.FigBudgetCI,
			endowment.FigCohorts, endowment.FigFraming, endowment.FigRefusal, endowment.FigCumulative, endowment.FigAudit}},
		{
			// The singular games alone: each ordered pairing once, so
			// (B) pools the matchup into the residual, neither estimate
			// has a framing term, and Cohen's d is not defined.
			name: "singular only", golden: "report-singular.golden.md",
			mutate: func(in *rollout.TournamentReport) {
				var games []rollout.TournamentGame
				for _, g := range in.Games {
					if g.Condition == endowment.FramingSingular {
						games = append(games, g)
					}
				}
				in.Games, in.Conditions, in.Scheduled, in.FilesSHA256 = games, []string{endowment.FramingSingular}, len(games), ""
				settings := in.Analysis.(*endowment.TournamentSettings)
				// REML fits that fail are slow to fail: fewer resamples.
				settings.Cohorts, settings.Analysis.Bootstrap = nil, 30
			},
			figures: []string{endowment.FigShareMatrix, endowment.FigBudget, endowment.FigRefusal, endowment.FigCumulative, endowment.FigAudit},
		},
		{
			// Every played game gave .25 on turn 1: no variance to
			// decompose or explain, no framing contrast, no refusal to
			// rank, and figures with nothing to draw are said so in
			// words. (.25 is exact in binary; see
			// TestConstantShareRounding for .3.)
			name: "one share", golden: "report-constant.golden.md",
			mutate: func(in *rollout.TournamentReport) {
				for i := range in.Games {
					g := &in.Games[i]
					if g.Failed {
						continue
					}
					o, err := endowment.ParseOutcome(g.Rollout.Outcome)
					if err != nil {
						t.Fatal(err)
					}
					o.Share, o.Transferred, o.Balance, o.Turn1Refusal, o.Cumulative, o.Unparsed = .25, 25, 75, false, []float64{25, 25, 25}, 0
					b, err := json.Marshal(o)
					if err != nil {
						t.Fatal(err)
					}
					r := *g.Rollout
					r.Outcome = string(b)
					g.Rollout = &r
				}
			},
			figures: []string{endowment.FigShareMatrix, endowment.FigRefusal, endowment.FigCumulative},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := fixtureTournament(t)
			if tt.mutate != nil {
				tt.mutate(&in)
			}
			md, analysis, err := endowment.TournamentHook.Report(in)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "tournament", tt.golden), []byte(md))
			for _, f := range tt.figures {
				if st, err := os.Stat(filepath.Join(in.Dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("figure %s: %v", f, err)
				}
			}
			b, err := json.Marshal(analysis)
			if err != nil {
				t.Fatalf("the analysis is not JSON: %v", err)
			}
			var back map[string]any
			if err := json.Unmarshal(b, &back); err != nil || back["Played"] == nil {
				t.Errorf("analysis.json: Played = %v (%v)", back["Played"], err)
			}
		})
	}
}

// TestTournamentSettingsValidate: a tournament file's analysis and
// cohorts keys are checked against its agents, each error naming its key.
func TestTournamentSettingsValidate(t *testing.T) {
	agents := []string{"anchor", "wary"}
	for _, tt := range []struct {
		name   string
		change func(*endowment.TournamentSettings)
		want   []string
	}{
		{"defaults", func(*endowment.TournamentSettings) {}, nil},
		{"a cohort without a name", func(s *endowment.TournamentSettings) {
			s.Cohorts = []endowment.Cohort{{Name: " ", Drop: []string{"anchor"}}}
		}, []string{"key cohorts[0].name: must not be empty"}},
		{"a stranger in a cohort", func(s *endowment.TournamentSettings) {
			s.Cohorts = []endowment.Cohort{{Name: "ok", DropHolders: []string{"wary"}}, {Name: "bad", DropRequesters: []string{"stranger"}}}
		}, []string{`key cohorts[1]: names agent "stranger", which is not in agents`}},
		{"counts", func(s *endowment.TournamentSettings) { s.Analysis.Bootstrap, s.Analysis.EloPermutations = -1, 0 },
			[]string{"key analysis: bootstrap, splits and audit_draws must be ≥ 0"}},
		{"win threshold", func(s *endowment.TournamentSettings) { s.Analysis.WinThreshold = 1 }, []string{"key analysis.win_threshold: must be in (0, 1)"}},
		{"TOST bounds", func(s *endowment.TournamentSettings) { s.Analysis.TOSTBounds = []float64{0.2, 0} },
			[]string{"key analysis.tost_bounds[1]: must be positive"}},
		{"several at once", func(s *endowment.TournamentSettings) { s.Analysis.WinThreshold, s.Analysis.AuditMaxK = 0, 0 },
			[]string{"key analysis: ", "key analysis.win_threshold: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := endowment.DefaultTournamentSettings()
			tt.change(s)
			err := s.Validate(agents)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestTournamentHookFiles: a tournament freezes the embedded prompt files
// (or a prompts_dir's), in PromptFiles order, and reads each scenario
// row's framing as its condition.
func TestTournamentHookFiles(t *testing.T) {
	files, where, err := endowment.TournamentHook.Files(endowment.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if where != "the embedded prompts" || len(files) != len(endowment.PromptFiles) {
		t.Fatalf("%d files from %s, want %d from the embedded prompts", len(files), where, len(endowment.PromptFiles))
	}
	for i, f := range files {
		if f.Name != endowment.PromptFiles[i] || len(f.Data) == 0 {
			t.Errorf("file %d: %s (%d bytes), want %s", i, f.Name, len(f.Data), endowment.PromptFiles[i])
		}
	}
	p, err := endowment.LoadPrompts("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := p.WriteFiles(dir, writeFile); err != nil {
		t.Fatal(err)
	}
	cfg := endowment.DefaultConfig()
	cfg.PromptsDir = dir
	again, where, err := endowment.TournamentHook.Files(cfg)
	if err != nil || where != dir || len(again) != len(files) || string(again[0].Data) != string(files[0].Data) {
		t.Errorf("from %s: %d files from %s (%v), want the same %d", dir, len(again), where, err, len(files))
	}
	cfg.PromptsDir = filepath.Join(dir, "missing")
	if _, _, err := endowment.TournamentHook.Files(cfg); err == nil {
		t.Error("a missing prompts_dir gave files")
	}
}
