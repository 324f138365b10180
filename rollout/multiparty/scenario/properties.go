package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Constrained counts, over a scenario's honest-feasible packages, which
// kind of honest party is the most constrained at each: the one with the
// least slack (its utility for the package minus its BATNA, in points of
// its 100). HB counts the packages where only hard bargainers have the
// least slack, G those where only general agents do, Tie those where a
// hard bargainer and a general agent share it. The seed's table 5 counts
// this way: its shares are counts of packages (151, 25 and 13 of the 189
// honest-feasible packages of its 2HB+2G set; 40 and 110 of the 150 of its
// 1HB+3G set), not of scenarios.
type Constrained struct {
	HB  int `json:"hb"`
	G   int `json:"g"`
	Tie int `json:"tie"`
}

// Properties are the structural properties of one scenario (the seed's
// table 5), found by enumerating every package.
type Properties struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Packages is the number of packages; Feasible those meeting every
	// honest party's BATNA.
	Packages int `json:"packages"`
	Feasible int `json:"feasible"`
	// Acceptable counts, per honest role, the packages meeting its own BATNA.
	Acceptable map[string]int `json:"acceptable"`
	// Constrained counts the honest-feasible packages by the kind of their
	// most constrained party.
	Constrained Constrained `json:"most_constrained"`
	// OptionChanges is, per honest role, the fewest issues on which a
	// feasible package departs from the role's ideal (its best option on
	// every issue; an issue whose best score is shared by several options
	// counts as unchanged for any of them).
	OptionChanges map[string]int `json:"option_changes"`
	// UtilityLoss is, per honest role, its ideal total minus its best total
	// over the feasible packages.
	UtilityLoss map[string]int `json:"utility_loss"`
}

// Measure enumerates s and returns its properties. s must be valid.
func Measure(s *Scenario) Properties {
	honest := s.Honest()
	feasible := Feasible(s, honest)
	pr := Properties{
		ID: s.ID, Type: s.Type, Packages: s.Packages(), Feasible: len(feasible),
		Acceptable: map[string]int{}, OptionChanges: map[string]int{}, UtilityLoss: map[string]int{},
	}
	for _, p := range honest {
		party := s.Parties[p]
		pr.Acceptable[party.Role] = CountFeasible(s, []int{p})
		changes, best := len(s.Issues)+1, math.MinInt
		for _, pkg := range feasible {
			c := 0
			for i, k := range pkg {
				if party.Scores[i][k] != slices.Max(party.Scores[i]) {
					c++
				}
			}
			changes = min(changes, c)
			best = max(best, s.Utility(p, pkg))
		}
		if len(feasible) > 0 {
			pr.OptionChanges[party.Role] = changes
			pr.UtilityLoss[party.Role] = s.MaxUtility(p) - best
		}
	}
	for _, pkg := range feasible {
		minHB, minG := math.MaxInt, math.MaxInt
		for _, p := range honest {
			slack := s.Utility(p, pkg) - s.Parties[p].BATNA
			if s.Parties[p].Kind == KindHardBargainer {
				minHB = min(minHB, slack)
			} else {
				minG = min(minG, slack)
			}
		}
		switch {
		case minHB < minG:
			pr.Constrained.HB++
		case minG < minHB:
			pr.Constrained.G++
		default:
			pr.Constrained.Tie++
		}
	}
	return pr
}

// SetProperties aggregates the properties of a scenario set: one column of
// the seed's table 5.
type SetProperties struct {
	Type      string `json:"type"`
	Scenarios int    `json:"scenarios"`
	// Packages per scenario (the same for every scenario of a set, else 0).
	Packages int `json:"packages"`
	// FeasibleMean, FeasibleMin and FeasibleMax summarize the
	// honest-feasible packages per scenario; FeasibleShare is their mean
	// share of all packages, in percent.
	FeasibleMean  float64 `json:"feasible_mean"`
	FeasibleMin   int     `json:"feasible_min"`
	FeasibleMax   int     `json:"feasible_max"`
	FeasibleShare float64 `json:"feasible_share_pct"`
	// Constrained sums the scenarios' Constrained counts; ConstrainedHB,
	// ConstrainedG and ConstrainedTie are their shares (percent) of all the
	// set's honest-feasible packages.
	Constrained    Constrained `json:"most_constrained"`
	ConstrainedHB  float64     `json:"constrained_hb_pct"`
	ConstrainedG   float64     `json:"constrained_g_pct"`
	ConstrainedTie float64     `json:"constrained_tie_pct"`
	// ChangesHB and ChangesG are the mean option changes from the ideal to
	// the nearest feasible package of the hard bargainers and the general
	// agents (role means); LossHB and LossG the mean utility losses.
	ChangesHB float64 `json:"option_changes_hb"`
	ChangesG  float64 `json:"option_changes_g"`
	LossHB    float64 `json:"utility_loss_hb"`
	LossG     float64 `json:"utility_loss_g"`
}

// Summarize aggregates the properties of the scenarios of one set.
func Summarize(set []*Scenario) SetProperties {
	var sp SetProperties
	if len(set) == 0 {
		return sp
	}
	sp.Type = set[0].Type
	sp.Scenarios = len(set)
	sp.Packages = set[0].Packages()
	sp.FeasibleMin = math.MaxInt
	var nHB, nG int
	for _, s := range set {
		pr := Measure(s)
		if pr.Packages != sp.Packages {
			sp.Packages = 0
		}
		if s.Type != sp.Type {
			sp.Type = "mixed"
		}
		sp.FeasibleMean += float64(pr.Feasible)
		sp.FeasibleShare += 100 * float64(pr.Feasible) / float64(pr.Packages)
		sp.FeasibleMin = min(sp.FeasibleMin, pr.Feasible)
		sp.FeasibleMax = max(sp.FeasibleMax, pr.Feasible)
		sp.Constrained.HB += pr.Constrained.HB
		sp.Constrained.G += pr.Constrained.G
		sp.Constrained.Tie += pr.Constrained.Tie
		for _, p := range s.Parties {
			if !p.Honest() {
				continue
			}
			if p.Kind == KindHardBargainer {
				sp.ChangesHB += float64(pr.OptionChanges[p.Role])
				sp.LossHB += float64(pr.UtilityLoss[p.Role])
				nHB++
			} else {
				sp.ChangesG += float64(pr.OptionChanges[p.Role])
				sp.LossG += float64(pr.UtilityLoss[p.Role])
				nG++
			}
		}
	}
	n := float64(len(set))
	sp.FeasibleMean /= n
	sp.FeasibleShare /= n
	if all := sp.Constrained.HB + sp.Constrained.G + sp.Constrained.Tie; all > 0 {
		sp.ConstrainedHB = 100 * float64(sp.Constrained.HB) / float64(all)
		sp.ConstrainedG = 100 * float64(sp.Constrained.G) / float64(all)
		sp.ConstrainedTie = 100 * float64(sp.Constrained.Tie) / float64(all)
	}
	if nHB > 0 {
		sp.ChangesHB /= float64(nHB)
		sp.LossHB /= float64(nHB)
	}
	if nG > 0 {
		sp.ChangesG /= float64(nG)
		sp.LossG /= float64(nG)
	}
	return sp
}

// PropertiesTable renders set properties as the seed's table 5: one
// column per set.
func PropertiesTable(sets []SetProperties) string {
	var b strings.Builder
	b.WriteString("| Structural property |")
	for _, s := range sets {
		fmt.Fprintf(&b, " %s |", TypeLabel(s.Type))
	}
	b.WriteString("\n|---|")
	for range sets {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	row := func(name string, f func(SetProperties) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, s := range sets {
			fmt.Fprintf(&b, " %s |", f(s))
		}
		b.WriteString("\n")
	}
	row("Scenarios", func(s SetProperties) string { return fmt.Sprint(s.Scenarios) })
	row("Packages per scenario", func(s SetProperties) string { return fmt.Sprint(s.Packages) })
	row("Honest-feasible packages, mean [range]", func(s SetProperties) string {
		return fmt.Sprintf("%.2f [%d, %d]", s.FeasibleMean, s.FeasibleMin, s.FeasibleMax)
	})
	row("Honest-feasible share of all packages (%)", func(s SetProperties) string { return fmt.Sprintf("%.3f", s.FeasibleShare) })
	row("Most constrained party: HB / G / tie (%)", func(s SetProperties) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f", s.ConstrainedHB, s.ConstrainedG, s.ConstrainedTie)
	})
	row("Option changes, ideal → nearest feasible (HB / G)", func(s SetProperties) string {
		return fmt.Sprintf("%.2f / %.2f", s.ChangesHB, s.ChangesG)
	})
	row("Utility loss, ideal → best feasible (HB / G)", func(s SetProperties) string {
		return fmt.Sprintf("%.1f / %.1f", s.LossHB, s.LossG)
	})
	return b.String()
}

// TypeLabel is a scenario type as the seed writes it ("2HB+2G").
func TypeLabel(typ string) string {
	switch typ {
	case Type2HB2G:
		return "2HB+2G"
	case Type1HB3G:
		return "1HB+3G"
	}
	return typ
}
