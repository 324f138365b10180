package endowment

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/stats"
	"github.com/parleyhq/parley/stats/roundrobin"
)

// game is the analysis view of one played game.
type game struct {
	id           string
	h, r         int // agent indices
	framing      int // 0 singular, 1 group
	share        float64
	turn1Refusal bool
	cumulative   []float64 // dollars given by the end of holder turn t (1..MaxTurns)
	features     []float64 // the requester's message features (MessageFeatureNames)
}

// Interval is an estimate with its 95% bootstrap interval (NaN when not
// computed).
type Interval struct {
	Point, Lo, Hi float64
}

// AgentRow is an agent's line of table 5.
type AgentRow struct {
	Name, Family string
	OpenWeights  bool
	// As requester: games, win rate (%), mean share extracted (%), Elo.
	ReqGames               int
	ReqWin, ReqGot, ReqElo float64
	// As holder: games, win rate (%), mean share surrendered (%), Elo.
	HoldGames                  int
	HoldWin, HoldGave, HoldElo float64
}

// BudgetResult is the variance budget of one set of games (tables 3–4,
// figures 3–4): shares of the total, with 95% bootstrap intervals
// resampling ordered pairings.
type BudgetResult struct {
	Name                       string
	Games, Holders, Requesters int
	// MoM is the method-of-moments budget (specification B); Shares its
	// components' shares (0–1) by name, Ratio holder ÷ requester.
	MoM    roundrobin.Budget
	Shares map[string]Interval
	Ratio  Interval
	// Mixed is the crossed-random-intercepts fit (specification A, the
	// matchup in the residual), nil when not fitted or not converged
	// (MixedErr says why).
	Mixed       *roundrobin.Mixed
	MixedShares map[string]Interval
	MixedRatio  Interval
	MixedErr    string
	// Resamples made and FailedResamples whose estimate failed (MoM);
	// MixedFailedResamples those whose REML fit failed.
	Resamples, FailedResamples, MixedFailedResamples int
	Err                                              string
}

// RefusalResult is figure 6: each holder's turn-1 refusal rate against
// the share of the endowment it gave away.
type RefusalResult struct {
	Holders []string
	Rate    []float64 // turn-1 refusal rate (0–1)
	Gave    []float64 // mean share given (0–1)
	// Rho is Spearman's rho across holders; HeldOut the split-half
	// coefficient (refusal on a random half of each agent's games, loss
	// on the other, averaged over Splits splits), HeldOutLo/Hi the
	// central 95% of the splits.
	Rho, HeldOut, HeldOutLo, HeldOutHi float64
	Splits, SkippedSplits              int
	Err                                string
}

// FramingRow is one framing's line of table 7.
type FramingRow struct {
	Framing                    string
	Games                      int
	Mean, Median, RequesterWin float64 // percent
}

// FramingResult is table 7 and figure 5: the framing contrast.
type FramingResult struct {
	Rows       []FramingRow
	D          stats.CohenD // singular − group
	CI90, CI95 [2]float64
	TOST       []stats.TOST
	Err        string
}

// SequentialResult is table 8: the sequential R² of the share
// transferred, with holder identity, requester identity, the framing and
// the requester's message features entered in the paper's order
// (Forward) and in the reverse order (framing and message features
// together, then requester, then holder identity).
type SequentialResult struct {
	Forward, Reverse []stats.R2Step
	// Features are the message features' means over the games, and under
	// each framing (NaN without games).
	Features []FeatureMeans
	Err      string
}

// FeatureMeans is one message feature's means.
type FeatureMeans struct {
	Name                 string
	All, Singular, Group float64
}

// Block names of table 8.
const (
	BlockHolder          = "holder identity"
	BlockRequester       = "requester identity"
	BlockFraming         = "framing condition"
	BlockFeatures        = "message features"
	BlockFramingFeatures = "framing + message features"
)

// AuditPoint is one point of figure 12.
type AuditPoint struct {
	K             int
	Mean, Lo, Hi  float64
	Draws, Agents int
}

// Analysis is everything a tournament report shows.
type Analysis struct {
	Agents                              []AgentRow // spec order
	Scheduled, Recorded, Played, Failed int
	Unparsed, GamesWithUnparsed         int
	MaxTurns                            int
	// Share[h][r] is the mean share when agent h held against r (NaN when
	// none); Count the games; HolderOrder sorts holders by robustness
	// (least given first), RequesterOrder requesters by yield.
	Share                       [][]float64
	Count                       [][]int
	HolderOrder, RequesterOrder []int
	Budget                      BudgetResult
	Cohorts                     []BudgetResult
	Refusal                     RefusalResult
	Framing                     FramingResult
	Sequential                  SequentialResult
	Audit                       []AuditPoint
	// Cumulative[h][t-1] is holder h's mean dollars given by the end of
	// turn t; CumulativeAll the mean over every game.
	Cumulative    [][]float64
	CumulativeAll []float64
}

// AnalyzeTournament computes seed 001's analysis of a tournament's games.
func AnalyzeTournament(in rollout.TournamentReport) (*Analysis, error) {
	v, err := newTournamentView(in)
	if err != nil {
		return nil, err
	}
	return v.analyze()
}

func (v *tournamentView) analyze() (*Analysis, error) {
	a := &Analysis{Scheduled: v.Scheduled, Recorded: len(v.Games), MaxTurns: v.cfg.MaxTurns}
	n := len(v.Agents)
	var games []game
	for _, r := range v.Games {
		if r.Failed {
			a.Failed++
			continue
		}
		o, err := RolloutOutcome(r.Rollout)
		if err != nil {
			return nil, fmt.Errorf("endowment.AnalyzeTournament: game %s: %w", r.ID, err)
		}
		h, q := v.index(r.Seats[0]), v.index(r.Seats[1])
		if h < 0 || q < 0 {
			return nil, fmt.Errorf("endowment.AnalyzeTournament: game %s: agents %s, %s are not in the spec", r.ID, r.Seats[0], r.Seats[1])
		}
		f := 0
		if r.Condition == FramingGroup {
			f = 1
		}
		g := game{id: r.ID, h: h, r: q, framing: f, share: o.Share, turn1Refusal: o.Turn1Refusal, features: RequesterFeatures(r.Rollout.Turns).Values()}
		for t := 1; t <= a.MaxTurns; t++ {
			g.cumulative = append(g.cumulative, o.CumulativeAt(t))
		}
		if o.Unparsed > 0 {
			a.Unparsed += o.Unparsed
			a.GamesWithUnparsed++
		}
		games = append(games, g)
	}
	a.Played = len(games)
	if len(games) == 0 {
		return a, errors.New("endowment.AnalyzeTournament: no game was played")
	}
	seed := uint64(v.Seed)
	an := v.settings.Analysis
	a.matrix(games, n)
	a.table5(v, games, n)
	a.Budget = budget("all agents", games, an.Bootstrap, seed, true)
	a.Cohorts = append(a.Cohorts, a.Budget)
	for _, c := range v.settings.Cohorts {
		drop := func(l ...[]string) map[int]bool {
			m := map[int]bool{}
			for _, names := range l {
				for _, nm := range names {
					m[v.index(nm)] = true
				}
			}
			return m
		}
		dh, dr := drop(c.DropHolders, c.Drop), drop(c.DropRequesters, c.Drop)
		var sub []game
		for _, g := range games {
			if !dh[g.h] && !dr[g.r] {
				sub = append(sub, g)
			}
		}
		a.Cohorts = append(a.Cohorts, budget(c.Name, sub, an.Bootstrap, seed, false))
	}
	a.refusal(v, games, n, an.Splits, seed)
	a.framing(games, an)
	a.sequential(games, n)
	a.audit(games, n, an.AuditDraws, an.AuditMaxK, seed)
	a.cumulative(games, n)
	return a, nil
}

func (a *Analysis) matrix(games []game, n int) {
	sum := make([][]float64, n)
	a.Count = make([][]int, n)
	a.Share = make([][]float64, n)
	for i := range sum {
		sum[i], a.Count[i], a.Share[i] = make([]float64, n), make([]int, n), make([]float64, n)
	}
	for _, g := range games {
		sum[g.h][g.r] += g.share
		a.Count[g.h][g.r]++
	}
	gave, got := make([]float64, n), make([]float64, n)
	hn, rn := make([]int, n), make([]int, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if a.Count[i][j] == 0 {
				a.Share[i][j] = math.NaN()
				continue
			}
			a.Share[i][j] = sum[i][j] / float64(a.Count[i][j])
			gave[i] += sum[i][j]
			hn[i] += a.Count[i][j]
			got[j] += sum[i][j]
			rn[j] += a.Count[i][j]
		}
	}
	a.HolderOrder, a.RequesterOrder = order(n, gave, hn, false), order(n, got, rn, true)
}

// order sorts agents by mean (ascending, or descending with desc), agents
// without games last.
func order(n int, sum []float64, cnt []int, desc bool) []int {
	idx := make([]int, n)
	mean := make([]float64, n)
	for i := range idx {
		idx[i] = i
		mean[i] = math.Inf(1)
		if cnt[i] > 0 {
			mean[i] = sum[i] / float64(cnt[i])
			if desc {
				mean[i] = -mean[i]
			}
		}
	}
	sort.SliceStable(idx, func(x, y int) bool { return mean[idx[x]] < mean[idx[y]] })
	return idx
}

func (a *Analysis) table5(v *tournamentView, games []game, n int) {
	an := v.settings.Analysis
	var elo []stats.EloGame
	rows := make([]AgentRow, n)
	for i, ag := range v.Agents {
		rows[i] = AgentRow{Name: ag.Name, Family: ag.Family, OpenWeights: ag.OpenWeights}
	}
	for _, g := range games {
		score := 0.5
		switch {
		case g.share > an.WinThreshold:
			score = 1
			rows[g.r].ReqWin++
		case g.share < an.WinThreshold:
			score = 0
			rows[g.h].HoldWin++
		}
		rows[g.r].ReqGames++
		rows[g.r].ReqGot += g.share
		rows[g.h].HoldGames++
		rows[g.h].HoldGave += g.share
		elo = append(elo, stats.EloGame{Requester: v.Agents[g.r].Name, Holder: v.Agents[g.h].Name, Score: score})
	}
	ratings := stats.EloAverage(elo, stats.EloOptions{Start: an.EloStart, K: an.EloK, Permutations: an.EloPermutations, Seed: uint64(v.Seed)})
	for i := range rows {
		r := &rows[i]
		r.ReqElo, r.HoldElo = math.NaN(), math.NaN()
		if r.ReqGames > 0 {
			r.ReqWin, r.ReqGot = 100*r.ReqWin/float64(r.ReqGames), 100*r.ReqGot/float64(r.ReqGames)
			r.ReqElo = ratings.Requester[r.Name]
		} else {
			r.ReqWin, r.ReqGot = math.NaN(), math.NaN()
		}
		if r.HoldGames > 0 {
			r.HoldWin, r.HoldGave = 100*r.HoldWin/float64(r.HoldGames), 100*r.HoldGave/float64(r.HoldGames)
			r.HoldElo = ratings.Holder[r.Name]
		} else {
			r.HoldWin, r.HoldGave = math.NaN(), math.NaN()
		}
	}
	a.Agents = rows
}

func cellsOf(games []game) ([]roundrobin.Cell, error) {
	h, r, f := make([]int, len(games)), make([]int, len(games)), make([]int, len(games))
	y := make([]float64, len(games))
	for i, g := range games {
		h[i], r[i], f[i], y[i] = g.h, g.r, g.framing, g.share
	}
	return roundrobin.Cells(h, r, f, y)
}

func nan3() Interval { return Interval{math.NaN(), math.NaN(), math.NaN()} }

// budget computes the MoM budget of games with its bootstrap intervals
// and, with mixed, the crossed-random-intercepts fit with its own. The two
// are independent: a design one of them cannot estimate (no ordered
// pairing played twice leaves (B) without game noise of its own; (A)
// needs none) still gets the other. Why an estimate is missing is said in
// words (Err, MixedErr).
func budget(name string, games []game, b int, seed uint64, mixed bool) BudgetResult {
	res := BudgetResult{Name: name, Games: len(games), Shares: map[string]Interval{}, Ratio: nan3(), MixedShares: map[string]Interval{}, MixedRatio: nan3()}
	cells, err := cellsOf(games)
	if err == nil && len(cells) == 0 {
		err = errors.New("no games")
	}
	if err != nil {
		res.Err = err.Error()
		res.MixedErr = res.Err
		return res
	}
	hs, rs := map[int]bool{}, map[int]bool{}
	for _, c := range cells {
		hs[c.Holder], rs[c.Requester] = true, true
	}
	res.Holders, res.Requesters = len(hs), len(rs)
	shares := func(bg roundrobin.Budget) []float64 {
		out := make([]float64, 0, len(roundrobin.Components)+1)
		for _, c := range roundrobin.Components {
			out = append(out, bg.Share(c))
		}
		return append(out, bg.Ratio())
	}
	fill := func(dst map[string]Interval, ratio *Interval, point []float64, rows [][]float64) {
		for i, c := range roundrobin.Components {
			lo, hi := roundrobin.Interval(roundrobin.Column(rows, i), 0.95)
			dst[c] = Interval{point[i], lo, hi}
		}
		lo, hi := roundrobin.Interval(roundrobin.Column(rows, len(roundrobin.Components)), 0.95)
		*ratio = Interval{point[len(point)-1], lo, hi}
	}
	if mom, err := roundrobin.MoM(cells); err != nil {
		res.Err = budgetCause(err, games)
	} else {
		res.MoM = mom
		rows, failed := roundrobin.Bootstrap(cells, b, seed, func(cs []roundrobin.Cell) ([]float64, error) {
			bg, err := roundrobin.MoM(cs)
			if err != nil {
				return nil, err
			}
			return shares(bg), nil
		})
		res.Resamples, res.FailedResamples = b, failed
		fill(res.Shares, &res.Ratio, shares(mom), rows)
	}
	if !mixed {
		return res
	}
	fit, err := roundrobin.FitMixed(cells)
	if err != nil {
		res.MixedErr = budgetCause(err, games)
		return res
	}
	res.Mixed = &fit
	res.Resamples = b
	var mrows [][]float64
	mrows, res.MixedFailedResamples = roundrobin.Bootstrap(cells, b, seed+1, func(cs []roundrobin.Cell) ([]float64, error) {
		f, err := roundrobin.FitMixed(cs)
		if err != nil {
			return nil, err
		}
		return shares(f.Budget()), nil
	})
	fill(res.MixedShares, &res.MixedRatio, shares(fit.Budget()), mrows)
	return res
}

// budgetCause says in words why a budget could not be estimated.
func budgetCause(err error, games []game) string {
	switch {
	case errors.Is(err, roundrobin.ErrNoVariance):
		return fmt.Sprintf("every game transferred the same share of the endowment (%.1f%%): there is no variance to decompose", 100*games[0].share)
	case errors.Is(err, roundrobin.ErrConfounded):
		return "every holder met only one requester and every requester one holder (two agents, or a subset like it): holder and requester identity cannot be told apart"
	case errors.Is(err, roundrobin.ErrNotConverged):
		return "the REML optimiser did not converge"
	}
	msg := err.Error()
	for _, prefix := range []string{"roundrobin.MoM: ", "roundrobin.FitMixed: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}

// perHolder groups the games by holder.
func perHolder(games []game, n int) [][]game {
	out := make([][]game, n)
	for _, g := range games {
		out[g.h] = append(out[g.h], g)
	}
	return out
}

func rateGave(gs []game) (rate, gave float64) {
	for _, g := range gs {
		if g.turn1Refusal {
			rate++
		}
		gave += g.share
	}
	return rate / float64(len(gs)), gave / float64(len(gs))
}

func (a *Analysis) refusal(v *tournamentView, games []game, n, splits int, seed uint64) {
	res := RefusalResult{HeldOut: math.NaN(), HeldOutLo: math.NaN(), HeldOutHi: math.NaN(), Rho: math.NaN()}
	by := perHolder(games, n)
	var idx []int
	for i, gs := range by {
		if len(gs) == 0 {
			continue
		}
		r, g := rateGave(gs)
		res.Holders = append(res.Holders, v.Agents[i].Name)
		res.Rate, res.Gave = append(res.Rate, r), append(res.Gave, g)
		if len(gs) >= 2 {
			idx = append(idx, i)
		}
	}
	rho, err := stats.Spearman(res.Rate, res.Gave)
	switch {
	case errors.Is(err, stats.ErrConstant):
		res.Err = "every holder has the same turn-1 refusal rate, or gave the same share: ρ is not defined"
	case errors.Is(err, stats.ErrEmpty):
		res.Err = fmt.Sprintf("%d holders: ρ needs two", len(res.Holders))
	case err != nil:
		res.Err = err.Error()
	default:
		res.Rho = rho
	}
	if len(idx) >= 3 && splits > 0 {
		rng := rand.New(rand.NewPCG(seed, 0x68616c66))
		var rhos []float64
		for k := 0; k < splits; k++ {
			var rate, gave []float64
			for _, i := range idx {
				gs := append([]game(nil), by[i]...)
				rng.Shuffle(len(gs), func(x, y int) { gs[x], gs[y] = gs[y], gs[x] })
				half := len(gs) / 2
				r, _ := rateGave(gs[:half])
				_, g := rateGave(gs[half:])
				rate, gave = append(rate, r), append(gave, g)
			}
			if v, err := stats.Spearman(rate, gave); err == nil {
				rhos = append(rhos, v)
			} else {
				res.SkippedSplits++
			}
		}
		res.Splits = splits
		if len(rhos) > 0 {
			m := 0.0
			for _, v := range rhos {
				m += v / float64(len(rhos))
			}
			res.HeldOut = m
			res.HeldOutLo, res.HeldOutHi = roundrobin.Interval(rhos, 0.95)
		}
	}
	a.Refusal = res
}

func (a *Analysis) framing(games []game, an TournamentAnalysis) {
	var res FramingResult
	var x [2][]float64
	for _, g := range games {
		x[g.framing] = append(x[g.framing], g.share)
	}
	for f, name := range []string{FramingSingular, FramingGroup} {
		row := FramingRow{Framing: name, Games: len(x[f]), Mean: math.NaN(), Median: math.NaN(), RequesterWin: math.NaN()}
		if len(x[f]) > 0 {
			m, wins := 0.0, 0.0
			for _, v := range x[f] {
				m += v
				if v > an.WinThreshold {
					wins++
				}
			}
			row.Mean = 100 * m / float64(len(x[f]))
			row.Median = 100 * roundrobin.Percentile(x[f], 0.5)
			row.RequesterWin = 100 * wins / float64(len(x[f]))
		}
		res.Rows = append(res.Rows, row)
	}
	d, err := stats.Cohen(x[0], x[1])
	if err != nil {
		res.Err = framingCause(err, x)
		a.Framing = res
		return
	}
	res.D = d
	res.CI90[0], res.CI90[1] = d.Interval(0.90)
	res.CI95[0], res.CI95[1] = d.Interval(0.95)
	for _, b := range an.TOSTBounds {
		res.TOST = append(res.TOST, d.Tost(b))
	}
	a.Framing = res
}

func (a *Analysis) sequential(games []game, n int) {
	var res SequentialResult
	y := make([]float64, len(games))
	dummies := func(of func(game) int) [][]float64 {
		cols := make([][]float64, n)
		for k := range cols {
			cols[k] = make([]float64, len(games))
		}
		for i, g := range games {
			cols[of(g)][i] = 1
		}
		return cols
	}
	framing := make([]float64, len(games))
	feats := make([][]float64, len(MessageFeatureNames))
	for k := range feats {
		feats[k] = make([]float64, len(games))
	}
	for i, g := range games {
		y[i], framing[i] = g.share, float64(g.framing)
		for k, v := range g.features {
			feats[k][i] = v
		}
	}
	for k, name := range MessageFeatureNames {
		fm := FeatureMeans{Name: name}
		var sum, cnt [3]float64
		for i, g := range games {
			sum[0], cnt[0] = sum[0]+feats[k][i], cnt[0]+1
			sum[1+g.framing], cnt[1+g.framing] = sum[1+g.framing]+feats[k][i], cnt[1+g.framing]+1
		}
		m := func(j int) float64 {
			if cnt[j] == 0 {
				return math.NaN()
			}
			return sum[j] / cnt[j]
		}
		fm.All, fm.Singular, fm.Group = m(0), m(1), m(2)
		res.Features = append(res.Features, fm)
	}
	holder, requester := dummies(func(g game) int { return g.h }), dummies(func(g game) int { return g.r })
	fw, err := stats.SequentialR2(y, []stats.Block{{Name: BlockHolder, Columns: holder}, {Name: BlockRequester, Columns: requester},
		{Name: BlockFraming, Columns: [][]float64{framing}}, {Name: BlockFeatures, Columns: feats}})
	if err != nil {
		if errors.Is(err, stats.ErrConstant) {
			res.Err = fmt.Sprintf("every game transferred the same share of the endowment (%.1f%%): there is no variance to explain", 100*games[0].share)
		} else {
			res.Err = err.Error()
		}
		a.Sequential = res
		return
	}
	rv, err := stats.SequentialR2(y, []stats.Block{{Name: BlockFramingFeatures, Columns: append([][]float64{framing}, feats...)},
		{Name: BlockRequester, Columns: requester}, {Name: BlockHolder, Columns: holder}})
	if err != nil {
		res.Err = err.Error()
	}
	res.Forward, res.Reverse = fw, rv
	a.Sequential = res
}

// framingCause says in words why Cohen's d is not defined on the shares
// x[0] (singular) and x[1] (group).
func framingCause(err error, x [2][]float64) string {
	names := [2]string{FramingSingular, FramingGroup}
	switch {
	case len(x[0]) == 0 || len(x[1]) == 0:
		only := 0
		if len(x[0]) == 0 {
			only = 1
		}
		return fmt.Sprintf("only the %s framing was played (%d games): there is no framing contrast", names[only], len(x[only]))
	case len(x[0]) < 2 || len(x[1]) < 2:
		return fmt.Sprintf("%d %s and %d %s games: Cohen's d needs at least two games under each framing", len(x[0]), names[0], len(x[1]), names[1])
	case errors.Is(err, stats.ErrConstant):
		return fmt.Sprintf("every game under each framing transferred the same share (%.1f%% singular, %.1f%% group): the pooled SD is 0", 100*x[0][0], 100*x[1][0])
	}
	return err.Error()
}

func (a *Analysis) audit(games []game, n, draws, maxK int, seed uint64) {
	by := perHolder(games, n)
	var idx []int
	minGames := math.MaxInt
	for i, gs := range by {
		if len(gs) >= 2 {
			idx = append(idx, i)
			minGames = min(minGames, len(gs))
		}
	}
	if len(idx) < 3 || draws <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, 0x61756469))
	for k := 1; k <= min(maxK, minGames-1); k++ {
		var rhos []float64
		for d := 0; d < draws; d++ {
			var rate, gave []float64
			for _, i := range idx {
				gs := append([]game(nil), by[i]...)
				rng.Shuffle(len(gs), func(x, y int) { gs[x], gs[y] = gs[y], gs[x] })
				r, _ := rateGave(gs[:k])
				_, g := rateGave(gs[k:])
				rate, gave = append(rate, r), append(gave, g)
			}
			if v, err := stats.Spearman(rate, gave); err == nil {
				rhos = append(rhos, v)
			}
		}
		p := AuditPoint{K: k, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Draws: len(rhos), Agents: len(idx)}
		if len(rhos) > 0 {
			m := 0.0
			for _, v := range rhos {
				m += v / float64(len(rhos))
			}
			p.Mean = m
			p.Lo, p.Hi = roundrobin.Interval(rhos, 0.95)
		}
		a.Audit = append(a.Audit, p)
	}
}

func (a *Analysis) cumulative(games []game, n int) {
	a.Cumulative = make([][]float64, n)
	a.CumulativeAll = make([]float64, a.MaxTurns)
	by := perHolder(games, n)
	for i, gs := range by {
		a.Cumulative[i] = make([]float64, a.MaxTurns)
		for t := 0; t < a.MaxTurns; t++ {
			if len(gs) == 0 {
				a.Cumulative[i][t] = math.NaN()
				continue
			}
			for _, g := range gs {
				a.Cumulative[i][t] += g.cumulative[t] / float64(len(gs))
			}
		}
	}
	for t := 0; t < a.MaxTurns; t++ {
		for _, g := range games {
			a.CumulativeAll[t] += g.cumulative[t] / float64(len(games))
		}
	}
}
