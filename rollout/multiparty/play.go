package multiparty

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/scripted"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// party is one party's side of a game: its view, which holds its own
// system message (its private scores and BATNA only) and the public
// events it has been shown.
type party struct {
	role, name string
	info       scenario.Party
	scripted   bool
	system     string
	msgs       []llm.Message
	users      []string // its user messages, for a scripted party
	seen       int      // events shown to it so far
	turns      int
}

// event is one public line of the game: a party's message (author its
// role) or a moderator announcement (author "").
type event struct{ author, text string }

// negotiation plays one game.
type negotiation struct {
	g      *Game
	s      *scenario.Scenario
	state  *trust.State
	agents rollout.Agents
	rec    *dataset.Rollout

	parties []*party // scenario order
	byRole  map[string]*party
	order   []string // display names, sorted
	events  []event
	shape   protocol.Shape
	shown   map[string]map[string]float64 // what each party is shown (nil: no trust)
	out     *Outcome
}

func newNegotiation(g *Game, s *scenario.Scenario, st *trust.State, agents rollout.Agents, rec *dataset.Rollout) *negotiation {
	n := &negotiation{g: g, s: s, state: st, agents: agents, rec: rec, byRole: map[string]*party{}}
	n.shape = protocol.Shape{Issues: make([]string, len(s.Issues)), Options: s.Sizes()}
	for i, is := range s.Issues {
		n.shape.Issues[i] = is.ID
	}
	for _, r := range s.Roles() {
		n.order = append(n.order, st.Names[r])
	}
	sort.Strings(n.order)
	n.out = &Outcome{
		Scenario: s.ID, Type: s.Type, Trust: st.Settings, Game: st.Games,
		Names: st.Names, Kinds: map[string]string{}, BATNA: map[string]int{},
		Malformed: map[string]int{}, Abstained: map[string]int{},
	}
	n.shown = n.displayedTrust()
	for _, p := range s.Parties {
		pt := &party{role: p.Role, name: st.Names[p.Role], info: p, scripted: slices.Contains(g.cfg.Scripted, p.Role)}
		pt.system = protocol.System(protocol.Setup{Self: pt.name, Parties: n.order, Scenario: s, Party: p,
			MaxRounds: g.cfg.MaxRounds, VotesNeeded: g.cfg.VotesNeeded, Trust: st.Settings})
		pt.msgs = []llm.Message{{Role: "system", Content: pt.system}}
		n.parties = append(n.parties, pt)
		n.byRole[p.Role] = pt
		n.out.Kinds[p.Role] = p.Kind
		n.out.BATNA[p.Role] = p.BATNA
	}
	return n
}

// displayedTrust is what each party is shown of its trust: the state under
// S, S→P and S+P; 0.5 everywhere under S0.5+P; fresh uniform draws under
// Srand+P; nothing without trust.
func (n *negotiation) displayedTrust() map[string]map[string]float64 {
	switch n.state.Condition {
	case trust.CondNone:
		return nil
	case trust.CondS05P, trust.CondSRandP:
		rng := rand.New(rand.NewPCG(uint64(n.rec.Seed), 0x7472757374))
		out := map[string]map[string]float64{}
		for _, i := range n.s.Roles() {
			out[i] = map[string]float64{}
			for _, j := range n.s.Roles() {
				if i == j {
					continue
				}
				out[i][j] = 0.5
				if n.state.Condition == trust.CondSRandP {
					out[i][j] = math.Round(100*rng.Float64()) / 100
				}
			}
		}
		n.out.Shown = out
		return out
	}
	return copyTrust(n.state.Trust)
}

// TurnOrder is the order in which roles propose in a game with this seed:
// round r's proposer is order[(r−1) mod 5], and the others vote in the
// order that follows it.
func TurnOrder(seed int64, roles []string) []string {
	perm := rand.New(rand.NewPCG(uint64(seed), 0x6f72646572)).Perm(len(roles))
	out := make([]string, len(roles))
	for i, k := range perm {
		out[i] = roles[k]
	}
	return out
}

// trustView is what party p is shown at a decision.
func (n *negotiation) trustView(p *party) *protocol.TrustView {
	if n.shown == nil {
		return nil
	}
	tv := &protocol.TrustView{Scores: map[string]float64{}, Order: n.order, Reminder: n.state.Reminder()}
	for j, v := range n.shown[p.role] {
		tv.Scores[n.state.Names[j]] = v
	}
	return tv
}

func (n *negotiation) announce(text string) { n.events = append(n.events, event{text: text}) }
func (n *negotiation) said(p *party, text string) {
	n.events = append(n.events, event{author: p.role, text: protocol.Said(p.name, text)})
}

// run plays the rounds, then the assessments, and records the outcome.
func (n *negotiation) run(ctx context.Context) error {
	n.out.TrustBefore = copyTrust(n.state.Trust)
	turnOrder := TurnOrder(n.rec.Seed, n.s.Roles())
	for r := 1; r <= n.g.cfg.MaxRounds && !n.out.Deal; r++ {
		n.announce(protocol.RoundStart(r, n.g.cfg.MaxRounds))
		first := (r - 1) % len(turnOrder)
		var voters []*party
		for k := 1; k < len(turnOrder); k++ {
			voters = append(voters, n.byRole[turnOrder[(first+k)%len(turnOrder)]])
		}
		if err := n.round(ctx, r, n.byRole[turnOrder[first]], voters); err != nil {
			return err
		}
	}
	last := n.out.Rounds[len(n.out.Rounds)-1]
	result := protocol.NoDeal(len(n.out.Rounds))
	if n.out.Deal {
		result = protocol.Result(n.byRole[last.Proposer].name, last.Label, last.Yes, len(n.parties), n.g.cfg.VotesNeeded)
	} else {
		n.announce(result)
	}
	if err := n.assess(ctx, result); err != nil {
		return err
	}
	n.finish()
	return nil
}

// round plays one proposal and its votes.
func (n *negotiation) round(ctx context.Context, r int, proposer *party, voters []*party) error {
	rd := Round{Round: r, Proposer: proposer.role}
	var pkg []int
	text, ok, err := n.move(ctx, proposer, protocol.ProposeTurn(r, n.s, n.trustView(proposer)), n.g.turnTokens, func(t string) error {
		var e error
		pkg, e = protocol.ParseProposal(t, n.shape)
		return e
	})
	if err != nil {
		return err
	}
	n.said(proposer, text)
	if !ok {
		n.announce(protocol.NoProposal(proposer.name))
		n.out.Rounds = append(n.out.Rounds, rd)
		return nil
	}
	rd.Package, rd.Label = pkg, n.s.PackageLabel(pkg)
	rd.Votes = map[string]string{proposer.role: trust.VoteYes}
	rd.Utility = map[string]int{}
	for i, p := range n.s.Parties {
		rd.Utility[p.Role] = n.s.Utility(i, pkg)
	}
	n.announce(protocol.Proposed(proposer.name, rd.Label))
	if n.shown != nil {
		rd.Shown = map[string]float64{}
	}
	rd.Yes = 1
	for _, v := range voters {
		if err := n.vote(ctx, v, proposer, &rd); err != nil {
			return err
		}
	}
	rd.Passed = rd.Yes >= n.g.cfg.VotesNeeded
	n.announce(protocol.Result(proposer.name, rd.Label, rd.Yes, len(n.parties), n.g.cfg.VotesNeeded))
	n.out.Rounds = append(n.out.Rounds, rd)
	if rd.Passed {
		n.out.Deal, n.out.Package, n.out.Label, n.out.DealRound = true, pkg, rd.Label, r
		n.out.Utility = rd.Utility
	}
	return nil
}

// vote asks voter v for its vote on rd's proposal and records it.
func (n *negotiation) vote(ctx context.Context, v, proposer *party, rd *Round) error {
	var yes bool
	var hint *protocol.Hint
	if n.g.cfg.VoteHints {
		hint = &protocol.Hint{Total: rd.Utility[v.role], BATNA: v.info.BATNA}
	}
	vt, ok, err := n.move(ctx, v, protocol.VoteTurn(proposer.name, rd.Label, n.trustView(v), hint), n.g.turnTokens, func(t string) error {
		if n.g.cfg.LenientVotes {
			yes = protocol.ParseVoteLenient(t)
			return nil
		}
		var e error
		yes, e = protocol.ParseVote(t)
		return e
	})
	if err != nil {
		return err
	}
	vote := trust.VoteAbstain
	switch {
	case ok && yes:
		vote = trust.VoteYes
		rd.Yes++
		n.rec.Turns[len(n.rec.Turns)-1].Agree = true
	case ok:
		vote = trust.VoteNo
	}
	rd.Votes[v.role] = vote
	if rd.Shown != nil {
		rd.Shown[v.role] = n.shown[v.role][proposer.role]
	}
	n.said(v, vt)
	n.announce(protocol.Voted(v.name, vote))
	return nil
}

// move asks p for a move with instruction, after showing it the events it
// has not seen; a reply that parse rejects is asked again once. ok is
// false when the second reply is unreadable too (an abstention); text is
// the last reply.
func (n *negotiation) move(ctx context.Context, p *party, instruction string, maxTokens int, parse func(string) error) (string, bool, error) {
	var b strings.Builder
	for _, e := range n.events[p.seen:] {
		if e.author != p.role {
			b.WriteString(e.text)
			b.WriteString("\n")
		}
	}
	p.seen = len(n.events)
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	b.WriteString(instruction)
	text, err := n.speak(ctx, p, b.String(), maxTokens)
	if err != nil {
		return "", false, err
	}
	perr := parse(text)
	if perr == nil {
		return text, true, nil
	}
	n.out.Malformed[p.role]++
	text, err = n.speak(ctx, p, protocol.Retry(perr.Error(), instruction), maxTokens)
	if err != nil {
		return "", false, err
	}
	if perr = parse(text); perr != nil {
		n.out.Malformed[p.role]++
		n.out.Abstained[p.role]++
		return text, false, nil
	}
	return text, true, nil
}

// speak adds user to p's view and gets its reply, of at most maxTokens:
// from the model playing its role through Agents (its whole view; the
// sampled text goes back into the view as sampled), or from the game's
// scripted party.
func (n *negotiation) speak(ctx context.Context, p *party, user string, maxTokens int) (string, error) {
	p.msgs = append(p.msgs, llm.Message{Role: "user", Content: user})
	p.users = append(p.users, user)
	turn := p.turns
	p.turns++
	if p.scripted {
		rng := rand.New(rand.NewPCG(uint64(rollout.DeriveSeed(n.rec.Seed, "scripted/"+p.role, int64(turn))), 0x736372))
		text, err := scripted.Reply(p.system, p.users, rng)
		if err != nil {
			return "", fmt.Errorf("multiparty: scripted %s: %w", p.role, err)
		}
		p.msgs = append(p.msgs, llm.Message{Role: "assistant", Content: text})
		n.rec.Turns = append(n.rec.Turns, dataset.Turn{Agent: p.role, Text: text, FinishReason: "scripted"})
		return text, nil
	}
	reply, err := n.agents.Turn(ctx, p.role, p.msgs, rollout.TurnOptions{Kind: dataset.KindDialogue, MaxTokens: maxTokens})
	if err != nil {
		return "", err
	}
	p.msgs = append(p.msgs, llm.Message{Role: "assistant", Content: rollout.TrimEndTokens(reply.Raw)})
	n.rec.Turns = append(n.rec.Turns, dataset.Turn{Agent: p.role, Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, WeightVersion: reply.WeightVersion})
	return reply.Text, nil
}

// finish records the outcome on the rollout.
func (n *negotiation) finish() {
	o := n.out
	n.state.Games++
	o.TrustAfter = copyTrust(n.state.Trust)
	if o.Deal {
		for _, p := range n.s.Parties {
			if p.Honest() && o.Rounds[len(o.Rounds)-1].Votes[p.Role] == trust.VoteYes && o.Utility[p.Role] < p.BATNA {
				o.Invalid = append(o.Invalid, p.Role)
			}
		}
	}
	if !n.state.Updates() {
		o.TrustAfter = nil
		if n.state.Condition == trust.CondNone {
			o.TrustBefore = nil
		}
	}
	n.rec.Agreed = o.Deal
	n.rec.Rounds = int32(len(o.Rounds))
	n.rec.Final = o.Label
	b, _ := json.Marshal(o)
	n.rec.Outcome = string(b)
	for _, p := range n.parties {
		ro := n.rec.Role(p.role)
		if ro == nil {
			n.rec.Roles = append(n.rec.Roles, dataset.RoleOutcome{Role: p.role})
			ro = &n.rec.Roles[len(n.rec.Roles)-1]
		}
		if p.scripted {
			ro.Policy, ro.Model, ro.Endpoint = dataset.PolicyScripted, "scripted:"+p.info.Kind, ""
			ro.Trained = false
		}
		if !p.info.Honest() {
			ro.Trained = false // the adversary is never trained, whatever plays it
		}
		rb, _ := json.Marshal(o.Result(p.role))
		ro.Outcome = string(rb)
	}
}

func copyTrust(t map[string]map[string]float64) map[string]map[string]float64 {
	if t == nil {
		return nil
	}
	out := make(map[string]map[string]float64, len(t))
	for i, row := range t {
		out[i] = make(map[string]float64, len(row))
		for j, v := range row {
			out[i][j] = v
		}
	}
	return out
}
