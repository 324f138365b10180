package multiparty_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// synthetic makes a game of series k under settings s whose only content
// is whether it ended in a deal (a 2HB+2G game; with a deal every honest
// party gets 10 above its BATNA of 50).
func synthetic(s trust.Settings, k, game int, deal bool) dataset.Rollout {
	kinds := map[string]string{"hb1": "hard_bargainer", "hb2": "hard_bargainer", "g1": "general", "g2": "general", "adversary": "adversary"}
	batna := map[string]int{"hb1": 50, "hb2": 50, "g1": 50, "g2": 50, "adversary": 105}
	o := multiparty.Outcome{Type: "2hb2g", Trust: s, Game: game, Kinds: kinds, BATNA: batna, Names: map[string]string{}}
	if deal {
		o.Deal, o.DealRound = true, 2
		o.Utility = map[string]int{"hb1": 60, "hb2": 60, "g1": 60, "g2": 60, "adversary": 0}
		o.Rounds = []multiparty.Round{{Round: 2, Proposer: "g1", Package: []int{0, 0, 0, 0, 0}, Yes: 4, Passed: true, Utility: o.Utility,
			Votes: map[string]string{"g1": "yes", "g2": "yes", "hb1": "yes", "hb2": "yes", "adversary": "no"}}}
	}
	b, _ := json.Marshal(o)
	var roles []dataset.RoleOutcome
	for r := range kinds {
		roles = append(roles, dataset.RoleOutcome{Role: r, Policy: dataset.PolicyTrained, Model: "m"})
	}
	return dataset.Rollout{Env: multiparty.Name, RolloutID: fmt.Sprintf("%s-%d-%d", s.Condition, k, game),
		Series: multiparty.SeriesID("2hb2g", s, k), GameIndex: int32(game), Outcome: string(b), Roles: roles}
}

// TestReportTables checks table 3's arithmetic on four paired games:
//
//	S:   deal, no, no, deal   → α_S   = 50
//	S→P: deal, deal, no, deal → α_S→P = 75
//	S+P: deal, deal, deal, deal → α_S+P = 100
//
// Δ_S→P: differences 0, 100, 0, 0: mean 25, SD 50, t(0.975, 3) = 3.1824 →
// ± 3.1824·50/2 = 79.6; δ_S→P = 25/(100 − 50) = 0.50. Δ_S+P: 0, 100, 100, 0:
// 50 ± 3.1824·57.735/2 = 91.9. Δ_trust: 0, 0, 100, 0: 25 ± 79.6.
func TestReportTables(t *testing.T) {
	base := trust.Settings{Method: trust.MethodBRS, Lambda: 0.7, Gamma: 0.9, Prior: 0.5}
	deals := map[string][]bool{
		trust.CondS:    {true, false, false, true},
		trust.CondSToP: {true, true, false, true},
		trust.CondSP:   {true, true, true, true},
		trust.CondNone: {false, true, false, false},
	}
	var rs []dataset.Rollout
	for cond, ds := range deals {
		s := base
		s.Condition = cond
		for k, d := range ds {
			rs = append(rs, synthetic(s, k, 0, d))
		}
	}
	dir := t.TempDir()
	md, err := multiparty.WriteReport(rs, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"| BRS | 50.0 | 75.0 | 100.0 | +25.0 ± 79.6 | 0.50 | +50.0 ± 91.9 | +25.0 ± 79.6 |",
		// Table 2, S+P: every game a deal (100 ± 0), surplus 4·10 = 40, no
		// hard bargainer's NO, the one proposal meets every honest BATNA, R/deal 2.
		"| BRS (S+P) | 100.0 ± 0.0 | 40.00 ± 0.00 | 0.0 ± 0.0 | 100.0 ± 0.0 | 2.00 ± 0.00 |",
		// Table 1: one deal in four No-trust games, none invalid.
		"| m | 25.0 / 0.0 (n = 4) |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fig2-2hb2g.png")); err != nil {
		t.Error(err)
	}
}

// TestReportIntervalsOverSeries: the intervals are over series, the
// independent unit, not over games. Three series of four games each:
//
//	S:   k0 1 1 0 0 (50), k1 1 1 1 0 (75), k2 1 0 0 0 (25)
//	S+P: k0 1 1 1 0 (75), k1 1 1 1 1 (100), k2 1 1 1 0 (75)
//
// α_S over series: 50, 75, 25: mean 50, SD 25, t(0.975, 2) = 4.3027 →
// ± 4.3027·25/√3 = 62.1 (over the 12 games it would be ± 33.2). Δ_S+P
// paired by series: 25, 25, 50: mean 33.3, SD 14.43 → ± 35.9 (over games,
// 4 differences of 100 in 12: ± 31.3).
func TestReportIntervalsOverSeries(t *testing.T) {
	base := trust.Settings{Method: trust.MethodBRS, Lambda: 0.7, Gamma: 0.9, Prior: 0.5}
	deals := map[string][][]bool{
		trust.CondS:  {{true, true, false, false}, {true, true, true, false}, {true, false, false, false}},
		trust.CondSP: {{true, true, true, false}, {true, true, true, true}, {true, true, true, false}},
	}
	var rs []dataset.Rollout
	for cond, series := range deals {
		s := base
		s.Condition = cond
		for k, games := range series {
			for g, d := range games {
				rs = append(rs, synthetic(s, k, g, d))
			}
		}
	}
	md, err := multiparty.WriteReport(rs, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"| BRS (S) | 50.0 ± 62.1 |",
		"| BRS | 50.0 | – | 83.3 | – | – | +33.3 ± 35.9 | – |",
		"*Unit: the series (3 series per cell). ± is the 95% Student t interval over series",
		"A difference is paired by series",
		"24 games in 6 series",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
}
