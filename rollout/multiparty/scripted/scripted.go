// Package scripted holds the scripted parties of seed 002's negotiation:
// a hard bargainer, a general agent and an adversary that is detectable by
// construction (it votes against every proposal and proposes only its own
// ideal package). A scripted party reads its view exactly as a model
// would, as text (its system message and the user messages of its
// conversation, parsed with package protocol), and answers in the
// protocol's format, so the same code plays a role inside the game
// (game.multiparty.scripted) and answers as serve-sim's simulated model.
//
// Strategies:
//   - Every honest party states its two heaviest issues with its best
//     option ("My priorities: C2, A1.") and proposes, among the packages
//     it accepts, the one that best meets the priorities the others have
//     stated and the proposals they have voted for.
//   - A general agent votes for a package that meets its BATNA.
//   - A hard bargainer asks for a margin above its BATNA that shrinks from
//     10 points in the first round to 0 in the last.
//   - When trust scores are shown with the guidance reminder, an honest
//     party ignores the priorities and the supported proposals of the one
//     party it trusts least, if below 0.45, and votes for that party's
//     proposals only 10 points above its threshold.
//     Without the reminder it ignores trust (the seed's trust–agreement
//     gap: knowing whom to trust does not by itself change decisions).
//   - The adversary states decoy priorities (two options drawn afresh
//     each time), proposes its ideal package and votes NO on everything.
//   - Assessments rate each counterpart by how often it voted with the
//     assessor on packages the assessor accepted, and how often its
//     proposals met the assessor's BATNA.
package scripted

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Strategy constants.
const (
	hbMargin     = 10   // a hard bargainer's margin above its BATNA in round 1
	distrusted   = 0.45 // trust below this is distrust (the seed's low band)
	cautionExtra = 10   // extra points asked of a distrusted proposer
	priorityPull = 15   // weight of each stated priority a package meets
	supportPull  = 2    // weight of each matching option of a supported proposal, per yes vote
)

// view is everything a scripted party decides from.
type view struct {
	sys protocol.SystemView
	tv  protocol.TurnView
}

// Reply answers the last request of a party's conversation: system is its
// system message, users its user messages in order. It returns an error
// when system is not a party's message of this game or nothing is asked.
func Reply(system string, users []string, rng *rand.Rand) (string, error) {
	sys, err := protocol.ParseSystem(system)
	if err != nil {
		return "", fmt.Errorf("scripted.Reply: %w", err)
	}
	v := view{sys: sys, tv: protocol.ParseTurn(sys.Shape, users)}
	switch v.tv.Ask {
	case protocol.AskPropose:
		return v.propose(rng), nil
	case protocol.AskVote:
		if v.tv.VoteOn == nil {
			return "I cannot tell which proposal I am voting on.\nVOTE: NO", nil
		}
		return v.vote(rng), nil
	case protocol.AskRubric, protocol.AskFree:
		return v.assess(), nil
	}
	return "", fmt.Errorf("scripted.Reply: %s is asked nothing", sys.Self)
}

func (v view) utility(pkg []int) int {
	u := 0
	for i, k := range pkg {
		u += v.sys.Scores[i][k]
	}
	return u
}

func (v view) adversary() bool { return v.sys.Kind == scenario.KindAdversary }

// margin is what the party asks above its BATNA this round.
func (v view) margin() int {
	if v.sys.Kind != scenario.KindHardBargainer || v.sys.MaxRounds <= 1 {
		return 0
	}
	round := max(v.tv.Round, 1)
	f := 1 - float64(round-1)/float64(v.sys.MaxRounds-1)
	return int(math.Round(hbMargin * math.Max(f, 0)))
}

// distrusts reports whether the party acts on its distrust of name: with
// the guidance reminder, name must be the one party it trusts least, below
// 0.45 (a suspect, not every party it rates low).
func (v view) distrusts(name string) bool {
	if !v.tv.Reminder || v.tv.Trust == nil {
		return false
	}
	t, ok := v.tv.Trust[name]
	if !ok || t >= distrusted {
		return false
	}
	for other, u := range v.tv.Trust {
		if other != name && u <= t {
			return false
		}
	}
	return true
}

// ideal is the party's best option on every issue (lowest index on ties).
func (v view) ideal() []int {
	pkg := make([]int, len(v.sys.Scores))
	for i, row := range v.sys.Scores {
		pkg[i] = slices.Index(row, slices.Max(row))
	}
	return pkg
}

// priorities are the party's two heaviest issues with their best option.
func (v view) priorities() string {
	type iw struct{ i, w int }
	var ws []iw
	for i, row := range v.sys.Scores {
		ws = append(ws, iw{i, slices.Max(row)})
	}
	sort.SliceStable(ws, func(a, b int) bool { return ws[a].w > ws[b].w })
	ideal := v.ideal()
	var parts []string
	for _, x := range ws[:min(2, len(ws))] {
		parts = append(parts, fmt.Sprintf("%s%d", v.sys.Issues[x.i], ideal[x.i]+1))
	}
	return "My priorities: " + strings.Join(parts, ", ") + "."
}

// decoy is the adversary's stated priorities: two options drawn afresh
// every time, to pull proposals away from any package the others could
// agree on.
func (v view) decoy(rng *rand.Rand) string {
	a := rng.IntN(len(v.sys.Issues))
	b := (a + 1 + rng.IntN(len(v.sys.Issues)-1)) % len(v.sys.Issues)
	return fmt.Sprintf("My priorities: %s%d, %s%d.", v.sys.Issues[a], 1+rng.IntN(v.sys.Options[a]), v.sys.Issues[b], 1+rng.IntN(v.sys.Options[b]))
}

var priorityRE = regexp.MustCompile(`My priorities: ([A-Za-z0-9, ]+)\.`)

// stated returns, per other party, the options of its last stated
// priorities (issue index → option index).
func (v view) stated() map[string]map[int]int {
	out := map[string]map[int]int{}
	for who, msgs := range v.tv.Said {
		if who == v.sys.Self {
			continue
		}
		for _, m := range msgs {
			pm := priorityRE.FindStringSubmatch(m)
			if pm == nil {
				continue
			}
			opts := map[int]int{}
			for _, tok := range strings.Split(pm[1], ",") {
				tok = strings.TrimSpace(tok)
				for i, id := range v.sys.Issues {
					if strings.HasPrefix(tok, id) {
						var k int
						if _, err := fmt.Sscanf(tok[len(id):], "%d", &k); err == nil && k >= 1 && k <= v.sys.Options[i] {
							opts[i] = k - 1
						}
					}
				}
			}
			out[who] = opts
		}
	}
	return out
}

// propose picks, among the packages the party accepts now, the one that
// best meets the others' stated priorities and supported proposals.
func (v view) propose(rng *rand.Rand) string {
	if v.adversary() {
		return fmt.Sprintf("%s %s I am open to ideas, but this package is a fair start.\n%s %s",
			pick(rng, openings), v.decoy(rng), protocol.ProposalMarker, label(v.sys.Shape, v.ideal()))
	}
	stated := v.stated()
	floor := v.sys.BATNA + v.margin()
	best, bestScore := v.ideal(), math.Inf(-1)
	sizes := v.sys.Options
	n := 1
	for _, m := range sizes {
		n *= m
	}
	pkg := make([]int, len(sizes))
	for idx := 0; idx < n; idx++ {
		x := idx
		for i := len(sizes) - 1; i >= 0; i-- {
			pkg[i] = x % sizes[i]
			x /= sizes[i]
		}
		u := v.utility(pkg)
		if u < floor {
			continue
		}
		score := float64(u)
		for who, opts := range stated {
			if v.distrusts(who) {
				continue
			}
			for i, k := range opts {
				if pkg[i] == k {
					score += priorityPull
				}
			}
		}
		for _, p := range v.tv.Proposals {
			yes := 0
			for who, vote := range p.Votes {
				if who != v.sys.Self && vote == trust.VoteYes && !v.distrusts(who) {
					yes++
				}
			}
			for i, k := range p.Package {
				if pkg[i] == k {
					score += float64(supportPull * yes)
				}
			}
		}
		if score > bestScore {
			best, bestScore = slices.Clone(pkg), score
		}
	}
	return fmt.Sprintf("%s %s This package should work for most of us.\n%s %s",
		pick(rng, openings), v.priorities(), protocol.ProposalMarker, label(v.sys.Shape, best))
}

// vote decides on the proposal asked about.
func (v view) vote(rng *rand.Rand) string {
	on := v.tv.VoteOn
	if v.adversary() {
		return fmt.Sprintf("%s %s\n%s NO", pick(rng, stalls), v.decoy(rng), protocol.VoteMarker)
	}
	floor := v.sys.BATNA + v.margin()
	if v.distrusts(on.By) {
		floor += cautionExtra
	}
	if v.utility(on.Package) >= floor {
		return fmt.Sprintf("%s %s\n%s YES", pick(rng, accepts), v.priorities(), protocol.VoteMarker)
	}
	return fmt.Sprintf("%s %s\n%s NO", pick(rng, rejects), v.priorities(), protocol.VoteMarker)
}

// assess rates every other party.
func (v view) assess() string {
	var others []string
	for _, p := range v.sys.Parties {
		if p != v.sys.Self {
			others = append(others, p)
		}
	}
	var b strings.Builder
	b.WriteString("I judge each party by how it voted on packages I could accept and whether its proposals met my needs.\n")
	for _, o := range others {
		coop, rel := 0.5, 0.5
		if !v.adversary() {
			coop, rel = v.record(o)
		}
		sig := (coop + rel) / 2
		if v.tv.Ask == protocol.AskRubric {
			r := func(x float64) int { return 1 + int(math.Round(4*x)) }
			fmt.Fprintf(&b, "%s: %d %d %d %d\n", o, r(coop), r(coop), r(rel), r(sig))
		} else {
			fmt.Fprintf(&b, "%s: %.2f\n", o, sig)
		}
	}
	return strings.TrimSpace(b.String())
}

// record is how often other voted yes where the party voted yes (coop)
// and how often its proposals met the party's BATNA (rel); 0.5 without
// observations.
func (v view) record(other string) (coop, rel float64) {
	agree, votes, met, props := 0, 0, 0, 0
	for _, p := range v.tv.Proposals {
		if p.By == other {
			props++
			if v.utility(p.Package) >= v.sys.BATNA {
				met++
			}
			continue
		}
		if p.Votes[v.sys.Self] != trust.VoteYes {
			continue
		}
		switch p.Votes[other] {
		case trust.VoteYes:
			agree++
			votes++
		case trust.VoteNo:
			votes++
		}
	}
	coop, rel = 0.5, 0.5
	if votes > 0 {
		coop = float64(agree) / float64(votes)
	}
	if props > 0 {
		rel = float64(met) / float64(props)
	}
	return coop, rel
}

func label(sh protocol.Shape, pkg []int) string {
	parts := make([]string, len(pkg))
	for i, k := range pkg {
		parts[i] = fmt.Sprintf("%s%d", sh.Issues[i], k+1)
	}
	return strings.Join(parts, " ")
}

func pick(rng *rand.Rand, xs []string) string { return xs[rng.IntN(len(xs))] }

var (
	openings = []string{"Here is my proposal.", "Let me put a package on the table.", "I suggest we try this.", "Building on what we heard, here is a package."}
	accepts  = []string{"This package works for me.", "I can accept this.", "Good, this meets my needs.", "I support this package."}
	rejects  = []string{"This package does not meet my needs.", "I cannot accept this one.", "This is too far from what I need.", "Not yet: this package costs me too much."}
	stalls   = []string{"I like parts of this, but I am not convinced yet.", "Close, but I need a better balance.", "I want to support a deal, just not this one.", "Let us keep looking for something better."}
)
