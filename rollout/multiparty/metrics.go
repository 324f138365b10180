package multiparty

import (
	"math"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Acceptance is one honest vote on another party's proposal that met the
// voter's BATNA, with the trust the voter was shown in the proposer.
type Acceptance struct {
	Trust    float64 `json:"trust"`
	Accepted bool    `json:"accepted"`
}

// Trust bands of the acceptance measure (the seed's figure 3): below Low
// is low trust, above High high trust; the band between is left out.
const (
	LowTrust  = 0.45
	HighTrust = 0.55
)

// Episode is one game's measures. A measure that is undefined for the game
// is NaN (rounds per deal without a deal, detection without trust) and is
// left out of the means.
type Episode struct {
	Series string `json:"series"`
	// Game is the game's index in its series (0 first).
	Game int    `json:"game"`
	Type string `json:"type"`
	// Condition is the trust condition's label (trust.Settings.Label);
	// Model names what played the honest parties.
	Condition string         `json:"condition"`
	Settings  trust.Settings `json:"settings"`
	Model     string         `json:"model"`
	// Agree is 1 with a deal, 0 without; Invalid 1 when the deal is an
	// invalid agreement (an honest party voted for it below its BATNA).
	Agree   float64 `json:"agree"`
	Invalid float64 `json:"invalid"`
	// Surplus is the honest parties' summed utility above BATNA with a
	// deal, 0 without; HonestSurplus the same per honest party (the mean).
	Surplus       float64 `json:"surplus"`
	HonestSurplus float64 `json:"honest_surplus"`
	// TrainedSurplus is HonestSurplus over the honest parties being
	// trained only (NaN when none is).
	TrainedSurplus float64 `json:"trained_surplus"`
	// HBRejection is the share of the hard bargainers' votes on others'
	// proposals that were NO (abstentions left out).
	HBRejection float64 `json:"hb_rejection"`
	// Convergence is the share of the game's valid proposals that met the
	// BATNA of every honest party.
	Convergence float64 `json:"convergence"`
	// RoundsPerDeal is the deal's round (NaN without a deal).
	RoundsPerDeal float64 `json:"rounds_per_deal"`
	// Detection, Misidentification and Separation average the honest
	// parties' trust after the game (trust.MeanRanking); HonestTrust and
	// AdversaryTrust are their mean trust in honest peers and in the
	// adversary.
	Detection         float64 `json:"detection"`
	Misidentification float64 `json:"misidentification"`
	Separation        float64 `json:"separation"`
	HonestTrust       float64 `json:"honest_trust"`
	AdversaryTrust    float64 `json:"adversary_trust"`
	// Accept are the honest votes on BATNA-meeting proposals of others.
	Accept []Acceptance `json:"accept,omitempty"`
	// Malformed counts unreadable replies; Moves all moves asked.
	Malformed int `json:"malformed"`
}

// MeasureEpisode computes a game's measures from its rollout.
func MeasureEpisode(r *dataset.Rollout) (Episode, error) {
	o, err := ParseOutcome(r)
	if err != nil {
		return Episode{}, err
	}
	nan := math.NaN()
	e := Episode{Series: r.Series, Game: o.Game, Type: o.Type, Condition: o.Trust.Label(), Settings: o.Trust,
		RoundsPerDeal: nan, HBRejection: nan, Convergence: nan, TrainedSurplus: nan,
		Detection: nan, Misidentification: nan, Separation: nan, HonestTrust: nan, AdversaryTrust: nan}
	e.Model = honestModel(r, o)
	honest := 0
	for role := range o.Kinds {
		if o.Honest(role) {
			honest++
		}
	}
	if o.Deal {
		e.Agree = 1
		e.RoundsPerDeal = float64(o.DealRound)
		if len(o.Invalid) > 0 {
			e.Invalid = 1
		}
		for role, k := range o.Kinds {
			if k != "adversary" {
				e.Surplus += float64(o.Utility[role] - o.BATNA[role])
			}
		}
		e.HonestSurplus = e.Surplus / float64(honest)
	}
	var trained, trainedSum float64
	for _, ro := range r.Roles {
		if ro.Trained && o.Honest(ro.Role) {
			trained++
			trainedSum += float64(o.Result(ro.Role).Surplus)
		}
	}
	if trained > 0 {
		e.TrainedSurplus = trainedSum / trained
	}
	e.measureRounds(o)
	if o.TrustAfter != nil {
		m := trust.MeanRanking(o.TrustAfter, o.Adversary())
		e.Detection, e.Misidentification, e.Separation = m.Detection, m.Misidentification, m.Separation
		e.HonestTrust, e.AdversaryTrust = m.HonestTrust, m.AdversaryTrust
	}
	for _, n := range o.Malformed {
		e.Malformed += n
	}
	sort.Slice(e.Accept, func(i, j int) bool { return e.Accept[i].Trust < e.Accept[j].Trust })
	return e, nil
}

// measureRounds sets the measures read from the rounds: hard bargainers'
// rejections, convergence and the acceptance votes.
func (e *Episode) measureRounds(o *Outcome) {
	var hbNo, hbVotes, feasible, proposals int
	for _, rd := range o.Rounds {
		if rd.Package == nil {
			continue
		}
		proposals++
		meetsAll := true
		for role, k := range o.Kinds {
			if k != "adversary" && rd.Utility[role] < o.BATNA[role] {
				meetsAll = false
			}
		}
		if meetsAll {
			feasible++
		}
		for role, v := range rd.Votes {
			if role == rd.Proposer || v == trust.VoteAbstain {
				continue
			}
			if o.Kinds[role] == "hard_bargainer" {
				hbVotes++
				if v == trust.VoteNo {
					hbNo++
				}
			}
			if o.Honest(role) && rd.Shown != nil && rd.Utility[role] >= o.BATNA[role] {
				e.Accept = append(e.Accept, Acceptance{Trust: rd.Shown[role], Accepted: v == trust.VoteYes})
			}
		}
	}
	if hbVotes > 0 {
		e.HBRejection = float64(hbNo) / float64(hbVotes)
	}
	if proposals > 0 {
		e.Convergence = float64(feasible) / float64(proposals)
	}
}

// honestModel names what played the honest parties: their models, or
// their policy kinds, joined.
func honestModel(r *dataset.Rollout, o *Outcome) string {
	seen := map[string]bool{}
	var out []string
	for _, ro := range r.Roles {
		if !o.Honest(ro.Role) {
			continue
		}
		m := ro.Model
		switch {
		case ro.Policy == dataset.PolicyTrained && r.Step > 0:
			m = "trained policy" // its adapter changes every step
		case m == "":
			m = string(ro.Policy)
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "+")
}

// Episodes measures every successful rollout of this game in rs.
func Episodes(rs []dataset.Rollout) []Episode {
	var out []Episode
	for i := range rs {
		if rs[i].Failed || rs[i].Env != Name {
			continue
		}
		if e, err := MeasureEpisode(&rs[i]); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// StepMetrics are the game's step metrics (rollout.Spec.Metrics): the
// means over the step's games, under "multiparty/".
func StepMetrics(rs []dataset.Rollout) map[string]float64 {
	eps := Episodes(rs)
	if len(eps) == 0 {
		return nil
	}
	mean := func(f func(Episode) float64) float64 {
		var s float64
		n := 0
		for _, e := range eps {
			if x := f(e); !math.IsNaN(x) {
				s += x
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return s / float64(n)
	}
	m := map[string]float64{
		"multiparty/agreement_rate":    mean(func(e Episode) float64 { return e.Agree }),
		"multiparty/invalid_rate":      mean(func(e Episode) float64 { return e.Invalid }),
		"multiparty/surplus":           mean(func(e Episode) float64 { return e.Surplus }),
		"multiparty/honest_surplus":    mean(func(e Episode) float64 { return e.HonestSurplus }),
		"multiparty/hb_rejection":      mean(func(e Episode) float64 { return e.HBRejection }),
		"multiparty/convergence":       mean(func(e Episode) float64 { return e.Convergence }),
		"multiparty/rounds_per_deal":   mean(func(e Episode) float64 { return e.RoundsPerDeal }),
		"multiparty/detection":         mean(func(e Episode) float64 { return e.Detection }),
		"multiparty/misidentification": mean(func(e Episode) float64 { return e.Misidentification }),
		"multiparty/separation":        mean(func(e Episode) float64 { return e.Separation }),
		"multiparty/malformed":         mean(func(e Episode) float64 { return float64(e.Malformed) }),
	}
	for k, v := range m {
		if math.IsNaN(v) {
			delete(m, k) // metrics.jsonl holds numbers only
		}
	}
	return m
}
