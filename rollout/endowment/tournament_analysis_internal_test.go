package endowment

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/stats/roundrobin"
)

// The analysis of seed 001's tournament, one statistic at a time, on
// games made by hand. Every expected number is derived in the comments
// from the seed's definitions (the share transferred, the requester's win
// above the threshold, Spearman's ρ of turn-1 refusal against the share
// given, Cohen's d with the pooled SD, R² of least squares on dummies),
// not copied from the code's output.

const tol = 1e-9

// near reports whether got is want within tol, NaN matching NaN.
func near(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol
}

// nearAll is near over two slices of the same length.
func nearAll(got, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !near(got[i], want[i]) {
			return false
		}
	}
	return true
}

var nan = math.NaN()

// testView is a tournament of the named agents (family "fam", the first
// open-weights), three holder turns, the default settings with small
// resampling counts.
func testView(t *testing.T, names ...string) *tournamentView {
	t.Helper()
	settings := DefaultTournamentSettings()
	settings.Analysis.Bootstrap, settings.Analysis.Splits, settings.Analysis.AuditDraws, settings.Analysis.EloPermutations = 50, 40, 30, 20
	cfg := DefaultConfig()
	cfg.MaxTurns = 3
	in := rollout.TournamentReport{Section: cfg, Analysis: settings, Seed: 5}
	for i, n := range names {
		in.Agents = append(in.Agents, rollout.TournamentAgent{Name: n, Family: "fam", OpenWeights: i == 0})
	}
	v, err := newTournamentView(in)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// played is a game of holder h against requester r under framing f (0
// singular, 1 group) that transferred share, with or without a turn-1
// refusal.
func played(h, r, f int, share float64, refusal bool) game {
	return game{h: h, r: r, framing: f, share: share, turn1Refusal: refusal}
}

// TestMatrix: the share matrix is the mean share per ordered pairing (NaN
// where none was played); holders sort by the mean share they gave over
// their games (least first), requesters by the mean share they got (most
// first), agents without games last and ties in the agents' order.
func TestMatrix(t *testing.T) {
	for _, tt := range []struct {
		name              string
		n                 int
		games             []game
		share             [][]float64
		count             [][]int
		holders, requests []int
	}{
		{
			// Holders: 0 gave (.2+.4+0)/3 = .2, 1 (.6+.8)/2 = .7, 2
			// (1+.5)/2 = .75. Requesters: 0 got (.6+1)/2 = .8, 1
			// (.2+.4+.5)/3 = .367, 2 (0+.8)/2 = .4.
			name: "three agents",
			n:    3,
			games: []game{played(0, 1, 0, .2, false), played(0, 1, 1, .4, false), played(0, 2, 0, 0, true),
				played(1, 0, 0, .6, false), played(1, 2, 1, .8, false), played(2, 0, 0, 1, false), played(2, 1, 1, .5, false)},
			share:    [][]float64{{nan, .3, 0}, {.6, nan, .8}, {1, .5, nan}},
			count:    [][]int{{0, 2, 1}, {1, 0, 1}, {1, 1, 0}},
			holders:  []int{0, 1, 2},
			requests: []int{0, 2, 1},
		},
		{
			// Agent 2 played nothing: last in both orders.
			name:     "an agent without games",
			n:        3,
			games:    []game{played(1, 0, 0, .1, false), played(0, 1, 0, .9, false)},
			share:    [][]float64{{nan, .9, nan}, {.1, nan, nan}, {nan, nan, nan}},
			count:    [][]int{{0, 1, 0}, {1, 0, 0}, {0, 0, 0}},
			holders:  []int{1, 0, 2},
			requests: []int{1, 0, 2},
		},
		{
			// Every holder gave .5 and every requester got .5: the
			// agents' order stands.
			name:     "ties",
			n:        2,
			games:    []game{played(1, 0, 0, .5, false), played(0, 1, 0, .5, false)},
			share:    [][]float64{{nan, .5}, {.5, nan}},
			count:    [][]int{{0, 1}, {1, 0}},
			holders:  []int{0, 1},
			requests: []int{0, 1},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a Analysis
			a.matrix(tt.games, tt.n)
			for i := range tt.share {
				if !nearAll(a.Share[i], tt.share[i]) {
					t.Errorf("Share[%d] = %v, want %v", i, a.Share[i], tt.share[i])
				}
				for j := range tt.count[i] {
					if a.Count[i][j] != tt.count[i][j] {
						t.Errorf("Count[%d][%d] = %d, want %d", i, j, a.Count[i][j], tt.count[i][j])
					}
				}
			}
			if !equalInts(a.HolderOrder, tt.holders) || !equalInts(a.RequesterOrder, tt.requests) {
				t.Errorf("HolderOrder, RequesterOrder = %v, %v, want %v, %v", a.HolderOrder, a.RequesterOrder, tt.holders, tt.requests)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTable5: per role, games, win rate (the requester wins above the
// threshold, the holder below it, equal is a draw), mean share (got as
// requester, gave as holder) in percent, and Elo per role from 1500 with K
// 32.
func TestTable5(t *testing.T) {
	for _, tt := range []struct {
		name  string
		games []game
		want  []AgentRow
	}{
		{
			// A holds twice against B: .8 (B wins), .2 (A wins); B holds
			// once against A: .5 (a draw). A as requester: 1 game, 0 wins,
			// got 50%; as holder 2 games, 1 win, gave (.8+.2)/2 = 50%. B
			// as requester: 2 games, 1 win, got 50%; as holder 1 game, no
			// win, gave 50%. Elo is left out here (several orders).
			name:  "wins, losses and a draw",
			games: []game{played(0, 1, 0, .8, false), played(0, 1, 1, .2, true), played(1, 0, 0, .5, false)},
			want: []AgentRow{
				{Name: "A", Family: "fam", OpenWeights: true, ReqGames: 1, ReqWin: 0, ReqGot: 50, ReqElo: nan, HoldGames: 2, HoldWin: 50, HoldGave: 50, HoldElo: nan},
				{Name: "B", Family: "fam", ReqGames: 2, ReqWin: 50, ReqGot: 50, ReqElo: nan, HoldGames: 1, HoldWin: 0, HoldGave: 50, HoldElo: nan},
			},
		},
		{
			// One game, the requester B takes .9: expected score ½ at equal
			// ratings, so B's requester rating is 1500 + 32·(1 − ½) = 1516
			// and A's holder rating 1500 − 16 = 1484. A never asked and B
			// never held: no rating, no rates.
			name:  "one requester win",
			games: []game{played(0, 1, 0, .9, false)},
			want: []AgentRow{
				{Name: "A", Family: "fam", OpenWeights: true, ReqWin: nan, ReqGot: nan, ReqElo: nan, HoldGames: 1, HoldWin: 0, HoldGave: 90, HoldElo: 1484},
				{Name: "B", Family: "fam", ReqGames: 1, ReqWin: 100, ReqGot: 90, ReqElo: 1516, HoldWin: nan, HoldGave: nan, HoldElo: nan},
			},
		},
		{
			// A draw at exactly the threshold moves no rating.
			name:  "one draw",
			games: []game{played(0, 1, 0, .5, false)},
			want: []AgentRow{
				{Name: "A", Family: "fam", OpenWeights: true, ReqWin: nan, ReqGot: nan, ReqElo: nan, HoldGames: 1, HoldWin: 0, HoldGave: 50, HoldElo: 1500},
				{Name: "B", Family: "fam", ReqGames: 1, ReqWin: 0, ReqGot: 50, ReqElo: 1500, HoldWin: nan, HoldGave: nan, HoldElo: nan},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := testView(t, "A", "B")
			var a Analysis
			a.table5(v, tt.games, 2)
			for i, w := range tt.want {
				g := a.Agents[i]
				if g.Name != w.Name || g.Family != w.Family || g.OpenWeights != w.OpenWeights || g.ReqGames != w.ReqGames || g.HoldGames != w.HoldGames {
					t.Errorf("agent %d = %+v, want %+v", i, g, w)
				}
				for _, f := range []struct {
					name      string
					got, want float64
				}{{"ReqWin", g.ReqWin, w.ReqWin}, {"ReqGot", g.ReqGot, w.ReqGot}, {"HoldWin", g.HoldWin, w.HoldWin}, {"HoldGave", g.HoldGave, w.HoldGave}} {
					if !near(f.got, f.want) {
						t.Errorf("%s.%s = %v, want %v", w.Name, f.name, f.got, f.want)
					}
				}
				// Elo is checked where the games allow one order only.
				if len(tt.games) == 1 && (!near(g.ReqElo, w.ReqElo) || !near(g.HoldElo, w.HoldElo)) {
					t.Errorf("%s Elo (requester, holder) = %v, %v, want %v, %v", w.Name, g.ReqElo, g.HoldElo, w.ReqElo, w.HoldElo)
				}
				if g.ReqGames == 0 && !math.IsNaN(g.ReqElo) || g.HoldGames == 0 && !math.IsNaN(g.HoldElo) {
					t.Errorf("%s has a rating in a role it never played: %+v", w.Name, g)
				}
			}
		})
	}
}

// refusers are three holders of two games each whose games agree: holder
// 0 refuses on turn 1 and gives nothing, 1 and 2 concede at once and give
// .5 and .9. Turn-1 refusal rates [1, 0, 0] rank [3, 1.5, 1.5], shares
// given [0, .5, .9] rank [1, 2, 3]; the rank deviations [1, −.5, −.5] and
// [−1, 0, 1] give ρ = −1.5/√(1.5·2) = −√3/2. Any split or draw of a
// holder's games sees the same numbers, so the held-out coefficient and
// every audit point are −√3/2 too, with no spread.
func refusers(gamesEach int) []game {
	var out []game
	for k := 0; k < gamesEach; k++ {
		out = append(out, played(0, 1, k%2, 0, true), played(1, 2, k%2, .5, false), played(2, 0, k%2, .9, false))
	}
	return out
}

var rhoRefusers = -math.Sqrt(3) / 2

// TestRefusal: figure 6's Spearman ρ across holders and its split-half
// held-out coefficient, and why either is missing.
func TestRefusal(t *testing.T) {
	for _, tt := range []struct {
		name                     string
		games                    []game
		splits                   int
		rate, gave               []float64
		rho, heldOut             float64
		wantSplits, wantSkipped  int
		err                      string
		heldOutLo, heldOutHiWant float64
	}{
		{name: "refusal ranks losses", games: refusers(2), splits: 40, rate: []float64{1, 0, 0}, gave: []float64{0, .5, .9},
			rho: rhoRefusers, heldOut: rhoRefusers, heldOutLo: rhoRefusers, heldOutHiWant: rhoRefusers, wantSplits: 40},
		{
			// Nobody refuses: ρ is 0/0, and so is every split's.
			name:   "no refusal",
			games:  []game{played(0, 1, 0, .1, false), played(0, 1, 1, .2, false), played(1, 2, 0, .5, false), played(1, 2, 1, .5, false), played(2, 0, 0, .9, false), played(2, 0, 1, .7, false)},
			splits: 40, rate: []float64{0, 0, 0}, gave: []float64{.15, .5, .8},
			rho: nan, heldOut: nan, heldOutLo: nan, heldOutHiWant: nan, wantSplits: 40, wantSkipped: 40,
			err: "every holder has the same turn-1 refusal rate, or gave the same share: ρ is not defined",
		},
		{
			// One holder: no ρ; fewer than three holders with two games:
			// no held-out coefficient either.
			name:   "one holder",
			games:  []game{played(0, 1, 0, .4, true), played(0, 1, 1, .6, false)},
			splits: 40, rate: []float64{.5}, gave: []float64{.5},
			rho: nan, heldOut: nan, heldOutLo: nan, heldOutHiWant: nan,
			err: "1 holders: ρ needs two",
		},
		{
			// Two holders of two games each rank perfectly (ρ = −1): the
			// split-half coefficient needs three.
			name:   "two holders",
			games:  []game{played(0, 1, 0, 0, true), played(0, 1, 1, 0, true), played(1, 0, 0, .8, false), played(1, 0, 1, .8, false)},
			splits: 40, rate: []float64{1, 0}, gave: []float64{0, .8},
			rho: -1, heldOut: nan, heldOutLo: nan, heldOutHiWant: nan,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := testView(t, "A", "B", "C")
			var a Analysis
			a.refusal(v, tt.games, 3, tt.splits, 5)
			r := a.Refusal
			if !nearAll(r.Rate, tt.rate) || !nearAll(r.Gave, tt.gave) {
				t.Errorf("rate, gave = %v, %v, want %v, %v", r.Rate, r.Gave, tt.rate, tt.gave)
			}
			if !near(r.Rho, tt.rho) || !near(r.HeldOut, tt.heldOut) || !near(r.HeldOutLo, tt.heldOutLo) || !near(r.HeldOutHi, tt.heldOutHiWant) {
				t.Errorf("ρ %v, held-out %v [%v, %v], want %v, %v [%v, %v]", r.Rho, r.HeldOut, r.HeldOutLo, r.HeldOutHi, tt.rho, tt.heldOut, tt.heldOutLo, tt.heldOutHiWant)
			}
			if r.Splits != tt.wantSplits || r.SkippedSplits != tt.wantSkipped || r.Err != tt.err {
				t.Errorf("splits %d (%d skipped), err %q, want %d (%d), %q", r.Splits, r.SkippedSplits, r.Err, tt.wantSplits, tt.wantSkipped, tt.err)
			}
		})
	}
}

// TestFraming: table 7's rows and Cohen's d of singular − group, and why
// d is missing.
func TestFraming(t *testing.T) {
	an := DefaultTournamentSettings().Analysis
	for _, tt := range []struct {
		name            string
		singular, group []float64
		rows            []FramingRow
		d, sd           float64
		err             string
		tost            int
	}{
		{
			// Means .3 and .7, each SD √.02: pooled SD √.02 = .1414, d =
			// −.4/.1414 = −2√2. Requesters win none singular, both group.
			name: "two framings", singular: []float64{.2, .4}, group: []float64{.6, .8},
			rows: []FramingRow{{FramingSingular, 2, 30, 30, 0}, {FramingGroup, 2, 70, 70, 100}},
			d:    -2 * math.Sqrt2, sd: math.Sqrt(.02), tost: 3,
		},
		{
			// Median of .1, .2, .9 is .2; mean .4; one win in three.
			// Group .3, .5: mean .4, no win (.5 is not above .5). Equal
			// means: d = 0.
			name: "odd count", singular: []float64{.1, .2, .9}, group: []float64{.3, .5},
			rows: []FramingRow{{FramingSingular, 3, 40, 20, 100.0 / 3}, {FramingGroup, 2, 40, 40, 0}},
			// s1² = ((−.3)² + (−.2)² + .5²)/2 = .19, s2² = .02;
			// pooled = √((2·.19 + .02)/3) = √(.4/3).
			d: 0, sd: math.Sqrt(.4 / 3), tost: 3,
		},
		{
			name: "one framing", singular: []float64{.2, .4},
			rows: []FramingRow{{FramingSingular, 2, 30, 30, 0}, {FramingGroup, 0, nan, nan, nan}},
			d:    nan, sd: nan,
			err: "only the singular framing was played (2 games): there is no framing contrast",
		},
		{
			name: "one game in a framing", singular: []float64{.2}, group: []float64{.6, .8},
			rows: []FramingRow{{FramingSingular, 1, 20, 20, 0}, {FramingGroup, 2, 70, 70, 100}},
			d:    nan, sd: nan,
			err: "1 singular and 2 group games: Cohen's d needs at least two games under each framing",
		},
		{
			name: "constant within framings", singular: []float64{.3, .3}, group: []float64{.5, .5},
			rows: []FramingRow{{FramingSingular, 2, 30, 30, 0}, {FramingGroup, 2, 50, 50, 0}},
			d:    nan, sd: nan,
			err: "every game under each framing transferred the same share (30.0% singular, 50.0% group): the pooled SD is 0",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var games []game
			for _, s := range tt.singular {
				games = append(games, played(0, 1, 0, s, false))
			}
			for _, s := range tt.group {
				games = append(games, played(1, 0, 1, s, false))
			}
			var a Analysis
			a.framing(games, an)
			f := a.Framing
			if len(f.Rows) != 2 {
				t.Fatalf("%d rows, want 2", len(f.Rows))
			}
			for i, w := range tt.rows {
				g := f.Rows[i]
				if g.Framing != w.Framing || g.Games != w.Games || !near(g.Mean, w.Mean) || !near(g.Median, w.Median) || !near(g.RequesterWin, w.RequesterWin) {
					t.Errorf("row %d = %+v, want %+v", i, g, w)
				}
			}
			if f.Err != tt.err {
				t.Errorf("err %q, want %q", f.Err, tt.err)
			}
			if tt.err != "" {
				return
			}
			if !near(f.D.D, tt.d) || !near(f.D.SDPooled, tt.sd) || len(f.TOST) != tt.tost {
				t.Errorf("d %v (pooled SD %v), %d TOST rows, want %v (%v), %d", f.D.D, f.D.SDPooled, len(f.TOST), tt.d, tt.sd, tt.tost)
			}
			if !(f.CI95[0] < f.CI90[0] && f.CI90[0] < f.D.D && f.D.D < f.CI90[1] && f.CI90[1] < f.CI95[1]) {
				t.Errorf("intervals 95%% %v, 90%% %v do not nest around d = %v", f.CI95, f.CI90, f.D.D)
			}
		})
	}
}

// TestSequential: table 8's R² of the share on holder, requester, framing
// and message features, in the paper's order and in reverse.
//
// Four games: holder 0 against requesters 1, 2 gives .2, .4; holder 1
// against 0, 2 gives .6, .8. The mean is .5, the total sum of squares
// .09+.01+.01+.09 = .2. Holder means .3, .7 explain 4·.04 = .16: R² .8
// with one parameter (two dummies less the intercept; holder 2's dummy is
// all zeros). Requesters 1 and 0 played one game each and 2 two games
// whose residuals are both +.1: the requester dummies fit the rest, R² 1,
// two parameters. Framing (all singular) and the features (all zero) are
// constant: no parameter, nothing added.
//
// Reversed: the constant framing and features explain 0; requester means
// .2 (r1), .6 (r2: .4, .8), .6 (r0) explain .09+.01+.01+.01 = .12, R² .6;
// holder adds the remaining .4 with one parameter.
func TestSequential(t *testing.T) {
	games := []game{played(0, 1, 0, .2, false), played(0, 2, 0, .4, false), played(1, 0, 0, .6, false), played(1, 2, 0, .8, false)}
	var a Analysis
	a.sequential(games, 3)
	sq := a.Sequential
	if sq.Err != "" {
		t.Fatal(sq.Err)
	}
	type step struct {
		name      string
		r2, delta float64
		params    int
	}
	check := func(what string, got []step, want []step) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d steps, want %d", what, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.name != w.name || math.Abs(g.r2-w.r2) > 1e-9 || math.Abs(g.delta-w.delta) > 1e-9 || g.params != w.params {
				t.Errorf("%s step %d = %+v, want %+v", what, i, g, w)
			}
		}
	}
	var fw, rv []step
	for _, s := range sq.Forward {
		fw = append(fw, step{s.Name, s.R2, s.Delta, s.Params})
	}
	for _, s := range sq.Reverse {
		rv = append(rv, step{s.Name, s.R2, s.Delta, s.Params})
	}
	check("forward", fw, []step{{BlockHolder, .8, .8, 1}, {BlockRequester, 1, .2, 2}, {BlockFraming, 1, 0, 0}, {BlockFeatures, 1, 0, 0}})
	check("reverse", rv, []step{{BlockFramingFeatures, 0, 0, 0}, {BlockRequester, .6, .6, 2}, {BlockHolder, 1, .4, 1}})

	// Every game the same share: nothing to explain.
	same := []game{played(0, 1, 0, .5, false), played(1, 0, 1, .5, false)}
	a.sequential(same, 2)
	if want := "every game transferred the same share of the endowment (50.0%): there is no variance to explain"; a.Sequential.Err != want {
		t.Errorf("constant shares: err %q, want %q", a.Sequential.Err, want)
	}
}

// TestFeatureMeans: table 8's message features are averaged over all
// games and within each framing; a framing without games has none.
func TestFeatureMeans(t *testing.T) {
	feats := func(ind, length float64) []float64 { return []float64{ind, length, 0, 0, 0, 0, 0} }
	for _, tt := range []struct {
		name        string
		games       []game
		ind, length [3]float64 // all, singular, group
	}{
		{
			// Individuation 1, 1 singular and 0 group: .667 overall;
			// lengths 10, 20 singular and 60 group: 30 overall.
			name: "both framings",
			games: []game{{h: 0, r: 1, share: .1, features: feats(1, 10)}, {h: 1, r: 0, share: .2, features: feats(1, 20)},
				{h: 0, r: 1, framing: 1, share: .3, features: feats(0, 60)}},
			ind: [3]float64{2.0 / 3, 1, 0}, length: [3]float64{30, 15, 60},
		},
		{
			name:  "singular only",
			games: []game{{h: 0, r: 1, share: .1, features: feats(.5, 8)}, {h: 1, r: 0, share: .3, features: feats(0, 4)}},
			ind:   [3]float64{.25, .25, nan}, length: [3]float64{6, 6, nan},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a Analysis
			a.sequential(tt.games, 2)
			fs := a.Sequential.Features
			if len(fs) != len(MessageFeatureNames) {
				t.Fatalf("%d features, want %d", len(fs), len(MessageFeatureNames))
			}
			for i, want := range [][3]float64{tt.ind, tt.length} {
				f := fs[i]
				if f.Name != MessageFeatureNames[i] || !nearAll([]float64{f.All, f.Singular, f.Group}, want[:]) {
					t.Errorf("%s = %v, %v, %v, want %v", f.Name, f.All, f.Singular, f.Group, want)
				}
			}
		})
	}
}

// TestCumulative: figure 7's mean dollars given by the end of each
// holder turn, per holder and over every game.
//
// Holder 0's games gave 0, 10, 10 and 10, 20, 30 by turns 1–3: means 5,
// 15, 20. Holder 1's one game 50 at once. Holder 2 held none. Over the
// three games: (0+10+50)/3 = 20, (10+20+50)/3 = 80/3, (10+30+50)/3 = 30.
func TestCumulative(t *testing.T) {
	games := []game{{h: 0, r: 1, cumulative: []float64{0, 10, 10}}, {h: 0, r: 2, cumulative: []float64{10, 20, 30}}, {h: 1, r: 0, cumulative: []float64{50, 50, 50}}}
	a := Analysis{MaxTurns: 3}
	a.cumulative(games, 3)
	for i, want := range [][]float64{{5, 15, 20}, {50, 50, 50}, {nan, nan, nan}} {
		if !nearAll(a.Cumulative[i], want) {
			t.Errorf("Cumulative[%d] = %v, want %v", i, a.Cumulative[i], want)
		}
	}
	if want := []float64{20, 80.0 / 3, 30}; !nearAll(a.CumulativeAll, want) {
		t.Errorf("CumulativeAll = %v, want %v", a.CumulativeAll, want)
	}
}

// TestAudit: figure 12 has one point per probe count k from 1 to the
// fewest holder games less one (at most AuditMaxK), over the holders with
// two games or more; it needs three of them.
func TestAudit(t *testing.T) {
	for _, tt := range []struct {
		name        string
		games       []game
		draws, maxK int
		ks          []int
	}{
		{name: "three games each", games: refusers(3), draws: 30, maxK: 30, ks: []int{1, 2}},
		{name: "capped by audit_max_k", games: refusers(3), draws: 30, maxK: 1, ks: []int{1}},
		{name: "no draws", games: refusers(3), draws: 0, maxK: 30},
		{name: "one game each", games: refusers(1), draws: 30, maxK: 30},
		{name: "two holders", games: []game{played(0, 1, 0, 0, true), played(0, 1, 1, 0, true), played(1, 0, 0, .5, false), played(1, 0, 1, .6, false)}, draws: 30, maxK: 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a Analysis
			a.audit(tt.games, 3, tt.draws, tt.maxK, 5)
			if len(a.Audit) != len(tt.ks) {
				t.Fatalf("%d points %+v, want k = %v", len(a.Audit), a.Audit, tt.ks)
			}
			for i, p := range a.Audit {
				// See refusers: every draw gives −√3/2.
				if p.K != tt.ks[i] || p.Draws != tt.draws || p.Agents != 3 || !near(p.Mean, rhoRefusers) || !near(p.Lo, rhoRefusers) || !near(p.Hi, rhoRefusers) {
					t.Errorf("point %d = %+v, want k %d, %d draws, 3 agents, mean and interval %v", i, p, tt.ks[i], tt.draws, rhoRefusers)
				}
			}
		})
	}
}

// roundRobin is every ordered pairing of n agents under both framings,
// each game transferring share(h, r).
func roundRobin(n int, share func(h, r int) float64) []game {
	var out []game
	for h := 0; h < n; h++ {
		for r := 0; r < n; r++ {
			if h != r {
				out = append(out, played(h, r, 0, share(h, r), false), played(h, r, 1, share(h, r), false))
			}
		}
	}
	return out
}

// TestBudget: the variance budget's shares where the answer is known, and
// the words for designs that hold none.
func TestBudget(t *testing.T) {
	// Only the holder matters: holder identity is all the variance,
	// requester none (an unbounded ratio), and no game noise or framing.
	t.Run("holder only", func(t *testing.T) {
		res := budget("holder", roundRobin(4, func(h, _ int) float64 { return []float64{.1, .5, .9, .3}[h] }), 50, 1, false)
		if res.Err != "" {
			t.Fatal(res.Err)
		}
		if res.Games != 24 || res.Holders != 4 || res.Requesters != 4 || res.Resamples != 50 {
			t.Errorf("games %d, holders %d, requesters %d, resamples %d, want 24, 4, 4, 50", res.Games, res.Holders, res.Requesters, res.Resamples)
		}
		if h, r := res.Shares[roundrobin.CompHolder].Point, res.Shares[roundrobin.CompRequester].Point; math.Abs(h-1) > 1e-9 || r > 1e-9 {
			t.Errorf("holder, requester shares %v, %v, want 1, 0", h, r)
		}
		if res.Ratio.Point < 1e6 {
			t.Errorf("ratio %v, want unbounded", res.Ratio.Point)
		}
		if res.Mixed != nil || res.MixedErr != "" {
			t.Errorf("the mixed fit ran (%v, %q) though it was not asked for", res.Mixed, res.MixedErr)
		}
	})
	// Only the requester matters: the mirror image.
	t.Run("requester only", func(t *testing.T) {
		res := budget("requester", roundRobin(4, func(_, r int) float64 { return []float64{.1, .5, .9, .3}[r] }), 50, 1, false)
		if res.Err != "" {
			t.Fatal(res.Err)
		}
		if h, r := res.Shares[roundrobin.CompHolder].Point, res.Shares[roundrobin.CompRequester].Point; h > 1e-9 || math.Abs(r-1) > 1e-9 {
			t.Errorf("holder, requester shares %v, %v, want 0, 1", h, r)
		}
		if res.Ratio.Point > 1e-9 {
			t.Errorf("ratio %v, want 0", res.Ratio.Point)
		}
	})
	// Three agents make six ordered pairings: five effects (three holder,
	// three requester, less the mean) leave one degree of freedom, too few
	// for the matchup. The cause is said without the package's prefix.
	t.Run("three agents", func(t *testing.T) {
		res := budget("three", roundRobin(3, func(h, r int) float64 { return float64(h+2*r) / 10 }), 10, 1, false)
		if want := "6 ordered pairings for 5 holder and requester effects: too few left over to estimate the matchup"; res.Err != want {
			t.Errorf("err %q, want %q", res.Err, want)
		}
	})
	for _, tt := range []struct {
		name  string
		games []game
		err   string
	}{
		{"no games", nil, "no games"},
		{"one share", roundRobin(3, func(int, int) float64 { return .4 }),
			"every game transferred the same share of the endowment (40.0%): there is no variance to decompose"},
		{"two agents", []game{played(0, 1, 0, .1, false), played(0, 1, 1, .3, false), played(1, 0, 0, .6, false), played(1, 0, 1, .9, false)},
			"every holder met only one requester and every requester one holder (two agents, or a subset like it): holder and requester identity cannot be told apart"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := budget(tt.name, tt.games, 10, 1, true)
			if res.Err != tt.err || res.MixedErr != tt.err || res.Mixed != nil {
				t.Errorf("err %q, mixed err %q (fit %v), want %q for both", res.Err, res.MixedErr, res.Mixed, tt.err)
			}
			if !math.IsNaN(res.Ratio.Point) || !math.IsNaN(res.MixedRatio.Point) {
				t.Errorf("ratios %v, %v, want NaN", res.Ratio.Point, res.MixedRatio.Point)
			}
		})
	}
}

// TestNewTournamentView: a report needs the game's section and its
// analysis settings, typed.
func TestNewTournamentView(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   rollout.TournamentReport
		want string
	}{
		{"no section", rollout.TournamentReport{Analysis: DefaultTournamentSettings()}, "the game's section is <nil>, want *endowment.Config"},
		{"another game's section", rollout.TournamentReport{Section: struct{}{}, Analysis: DefaultTournamentSettings()}, "the game's section is struct {}, want *endowment.Config"},
		{"no settings", rollout.TournamentReport{Section: DefaultConfig()}, "needs its analysis settings, got <nil>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newTournamentView(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("newTournamentView() = %v, want an error containing %q", err, tt.want)
			}
			if _, err := AnalyzeTournament(tt.in); err == nil {
				t.Error("AnalyzeTournament accepted it")
			}
		})
	}
}

// TestConstantShareRounding: games that all transferred the same share
// have no framing contrast and no variance to explain, whatever the
// share, .3 (whose mean binary cannot hold exactly, leaving residues of
// about 1e-17) as well as .25.
func TestConstantShareRounding(t *testing.T) {
	for _, share := range []float64{.25, .3} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			var games []game
			for k := 0; k < 24; k++ {
				games = append(games, played(k%3, (k+1)%3, k%2, share, false))
			}
			var a Analysis
			a.framing(games, DefaultTournamentSettings().Analysis)
			a.sequential(games, 3)
			if want := fmt.Sprintf("every game under each framing transferred the same share (%.1f%% singular, %.1f%% group): the pooled SD is 0", 100*share, 100*share); a.Framing.Err != want {
				t.Errorf("framing: err %q (d %v), want %q", a.Framing.Err, a.Framing.D.D, want)
			}
			if want := fmt.Sprintf("every game transferred the same share of the endowment (%.1f%%): there is no variance to explain", 100*share); a.Sequential.Err != want {
				t.Errorf("sequential: err %q, want %q", a.Sequential.Err, want)
			}
		})
	}
}
