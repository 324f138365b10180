package multiparty

import (
	"context"
	"sort"

	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// assess updates the trust state after a game, when the condition updates
// trust: under BRS from each party's observations of the proposals and
// votes (no model call); under rubric or free-form assessment from what
// each party writes when asked, after the game's end is announced, to
// assess the others (an unreadable reply is asked again once; a
// counterpart still without a readable line keeps its trust and is
// recorded in AssessFailed).
func (n *negotiation) assess(ctx context.Context, result string) error {
	if !n.state.Updates() {
		return nil
	}
	if n.state.Method == trust.MethodBRS {
		n.assessBRS()
		return nil
	}
	kind, parse := protocol.AssessRubric, protocol.ParseRubric
	if n.state.Method == trust.MethodFreeForm {
		kind, parse = protocol.AssessFreeForm, protocol.ParseFreeForm
	}
	n.out.Signals = map[string]map[string]float64{}
	for _, p := range n.parties {
		var others []string
		byName := map[string]string{}
		for _, q := range n.parties {
			if q != p {
				others = append(others, q.name)
				byName[q.name] = q.role
			}
		}
		sort.Strings(others)
		var got map[string]float64
		tokens := n.g.turnTokens
		if n.g.cfg.AssessTokens > 0 {
			tokens = n.g.cfg.AssessTokens
		}
		_, _, err := n.move(ctx, p, protocol.GameOver(result)+"\n"+protocol.AssessTurn(kind, others), tokens, func(t string) error {
			var e error
			got, e = parse(t, others)
			return e
		})
		if err != nil {
			return err
		}
		sig := map[string]float64{}
		for _, o := range others {
			if v, ok := got[o]; ok {
				sig[byName[o]] = v
			} else {
				if n.out.AssessFailed == nil {
					n.out.AssessFailed = map[string][]string{}
				}
				n.out.AssessFailed[p.role] = append(n.out.AssessFailed[p.role], byName[o])
			}
		}
		n.out.Signals[p.role] = sig
	}
	n.state.ApplyEMA(n.out.Signals)
	return nil
}

// assessBRS counts each party's observations of the game (trust.BRSCounts)
// and folds them into its evidence.
func (n *negotiation) assessBRS() {
	var obs []trust.Observation
	for _, rd := range n.out.Rounds {
		if rd.Package == nil {
			continue
		}
		o := trust.Observation{Proposer: rd.Proposer, Votes: rd.Votes, Meets: map[string]bool{}}
		for _, p := range n.s.Parties {
			o.Meets[p.Role] = rd.Utility[p.Role] >= p.BATNA
		}
		obs = append(obs, o)
	}
	roles := n.s.Roles()
	n.out.Counts = map[string]map[string]trust.Evidence{}
	for _, r := range roles {
		n.out.Counts[r] = trust.BRSCounts(r, obs, roles)
	}
	n.state.ApplyBRS(n.out.Counts)
}
