package trust

import "math"

// tieTol is the tolerance under which two trust values count as equal.
const tieTol = 1e-9

// Ranking is what one observer's trust vector says about the adversary.
type Ranking struct {
	// Detected: the adversary alone has the observer's lowest trust.
	Detected bool
	// Misidentified: the lowest trust goes to honest parties only (the
	// adversary is not among the lowest). A tie between the adversary and
	// an honest party at the bottom is neither detected nor misidentified,
	// as is the prior, where every counterpart ties.
	Misidentified bool
	// Separation is the mean trust in the honest counterparts minus the
	// trust in the adversary.
	Separation float64
}

// Rank reads observer's trust vector (counterpart → trust) against the
// adversary's role.
func Rank(vec map[string]float64, adversary string) Ranking {
	lo := math.Inf(1)
	for _, v := range vec {
		lo = math.Min(lo, v)
	}
	var r Ranking
	advLow, others := false, 0
	var honest float64
	nHonest := 0
	for j, v := range vec {
		low := v <= lo+tieTol
		if j == adversary {
			advLow = low
			continue
		}
		honest += v
		nHonest++
		if low {
			others++
		}
	}
	r.Detected = advLow && others == 0
	r.Misidentified = !advLow && others > 0
	if nHonest > 0 {
		r.Separation = honest/float64(nHonest) - vec[adversary]
	}
	return r
}

// Mean holds the means of the ranking measures over observers.
type Mean struct {
	Detection, Misidentification, Separation float64
	// HonestTrust is the mean trust of honest observers in honest peers;
	// AdversaryTrust their mean trust in the adversary (figure 8).
	HonestTrust, AdversaryTrust float64
	Observers                   int
}

// MeanRanking averages Rank over the honest observers of trust (observer →
// counterpart → trust): detection and misidentification as shares in
// [0, 1].
func MeanRanking(trust map[string]map[string]float64, adversary string) Mean {
	var m Mean
	for i, vec := range trust {
		if i == adversary {
			continue
		}
		r := Rank(vec, adversary)
		if r.Detected {
			m.Detection++
		}
		if r.Misidentified {
			m.Misidentification++
		}
		m.Separation += r.Separation
		var h float64
		n := 0
		for j, v := range vec {
			if j != adversary {
				h += v
				n++
			}
		}
		if n > 0 {
			m.HonestTrust += h / float64(n)
		}
		m.AdversaryTrust += vec[adversary]
		m.Observers++
	}
	if m.Observers > 0 {
		n := float64(m.Observers)
		m.Detection /= n
		m.Misidentification /= n
		m.Separation /= n
		m.HonestTrust /= n
		m.AdversaryTrust /= n
	}
	return m
}

// Vote values of an Observation.
const (
	VoteYes     = "yes"
	VoteNo      = "no"
	VoteAbstain = "abstain"
)

// Observation is one proposal of a game as every party saw it: who
// proposed, how each party voted, and whether the package met each
// party's own BATNA (which only that party knows).
type Observation struct {
	Proposer string
	Votes    map[string]string
	Meets    map[string]bool
}

// BRSCounts are observer's positive and negative observations of each
// counterpart in one game, from what the observer can see: a counterpart's
// proposal that meets the observer's BATNA is positive, one that does not
// is negative; on a proposal the observer voted for, each other voter
// (the proposer aside) who voted yes is positive and who voted no
// negative. Abstentions, and proposals the observer voted against, say
// nothing about the others.
func BRSCounts(observer string, obs []Observation, counterparts []string) map[string]Evidence {
	out := make(map[string]Evidence, len(counterparts))
	for _, j := range counterparts {
		if j != observer {
			out[j] = Evidence{}
		}
	}
	for _, o := range obs {
		if o.Proposer != observer {
			e := out[o.Proposer]
			if o.Meets[observer] {
				e.R++
			} else {
				e.S++
			}
			out[o.Proposer] = e
		}
		if o.Votes[observer] != VoteYes {
			continue
		}
		for j, v := range o.Votes {
			if j == observer || j == o.Proposer {
				continue
			}
			e, ok := out[j]
			if !ok {
				continue
			}
			switch v {
			case VoteYes:
				e.R++
			case VoteNo:
				e.S++
			}
			out[j] = e
		}
	}
	return out
}

// Replay recomputes a series' trust trajectory from its recorded per-game
// inputs under other settings (the seed's sensitivity to λ and γ, with
// behaviour held fixed): for BRS, counts[g] are game g's counts; for EMA
// methods, signals[g] are game g's signals. It returns the trust after
// each game.
func Replay(s Settings, names map[string]string, counts []map[string]map[string]Evidence, signals []map[string]map[string]float64) []map[string]map[string]float64 {
	st := NewState(s, names)
	n := max(len(counts), len(signals))
	out := make([]map[string]map[string]float64, 0, n)
	for g := 0; g < n; g++ {
		if s.Method == MethodBRS {
			if g < len(counts) {
				st.ApplyBRS(counts[g])
			}
		} else if g < len(signals) {
			st.ApplyEMA(signals[g])
		}
		out = append(out, st.Clone().Trust)
	}
	return out
}
