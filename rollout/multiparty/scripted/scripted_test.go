package scripted

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/parleyhq/parley/rollout/multiparty/protocol"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// tiny is testdata/tiny.json: three issues of two options. Totals per
// package (hb1 hb2 g1 g2):
//
//	A1 B1 C1: 15 11 10  7   A1 B1 C2: 23 11  5 10   A1 B2 C1: 13  4 14  4   A1 B2 C2: 21  4  9  7
//	A2 B1 C1:  5 17 10 10   A2 B1 C2: 13 17  5 13   A2 B2 C1:  3 10 14  7   A2 B2 C2: 11 10  9 10
//
// BATNAs: hb1 18, hb2 11, g1 5, g2 7; the adversary's 7 is above its best, 6.
func tiny(t *testing.T) *scenario.Scenario {
	t.Helper()
	b, err := os.ReadFile("testdata/tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func system(s *scenario.Scenario, role string, cond string) string {
	names := protocol.Names(5)
	i := 0
	for k, p := range s.Parties {
		if p.Role == role {
			i = k
		}
	}
	return protocol.System(protocol.Setup{Self: names[i], Parties: names, Scenario: s, Party: s.Parties[i], MaxRounds: 5, VotesNeeded: 4,
		Trust: trust.Settings{Method: trust.MethodBRS, Condition: cond}})
}

func reply(t *testing.T, sys string, users ...string) string {
	t.Helper()
	out, err := Reply(sys, users, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestVotes(t *testing.T) {
	s := tiny(t)
	// Names: hb1 Party A, hb2 Party B, g1 Party C, g2 Party D, adversary Party E.
	tests := []struct {
		role, label string
		round       int
		trust       map[string]float64
		want        string
		why         string
	}{
		{"g1", "A1 B1 C2", 1, nil, "YES", "5 ≥ 5"},
		{"g1", "A1 B1 C2", 5, nil, "YES", "rounds do not matter to a general agent"},
		{"g2", "A1 B1 C1", 1, nil, "YES", "7 ≥ 7"},
		{"g2", "A1 B2 C1", 1, nil, "NO", "4 < 7"},
		{"hb2", "A1 B1 C1", 1, nil, "NO", "11 < 11 + margin 10 in round 1"},
		{"hb2", "A1 B1 C1", 5, nil, "YES", "margin 0 in the last round"},
		{"hb2", "A2 B1 C1", 3, nil, "YES", "17 ≥ 11 + 5"},
		{"adversary", "A1 B1 C1", 5, nil, "NO", "the adversary votes NO on everything"},
		{"g2", "A1 B1 C1", 1, map[string]float64{"Party A": 0.3}, "NO", "distrusted proposer: 7 < 7 + 10, with the reminder"},
		{"g2", "A2 B1 C2", 1, map[string]float64{"Party A": 0.3}, "NO", "13 < 17"},
		{"g2", "A2 B1 C2", 1, map[string]float64{"Party A": 0.5}, "YES", "trusted proposer"},
	}
	for _, tt := range tests {
		cond := trust.CondNone
		var tv *protocol.TrustView
		if tt.trust != nil {
			cond = trust.CondSP
			tv = &protocol.TrustView{Scores: tt.trust, Order: protocol.Names(5), Reminder: true}
		}
		users := []string{protocol.RoundStart(tt.round, 5) + "\n" + protocol.Proposed("Party A", tt.label) + "\n\n" + protocol.VoteTurn("Party A", tt.label, tv)}
		got := reply(t, system(s, tt.role, cond), users...)
		if !strings.HasSuffix(got, "VOTE: "+tt.want) {
			t.Errorf("%s on %s round %d (%s): %q, want VOTE: %s", tt.role, tt.label, tt.round, tt.why, got, tt.want)
		}
	}
	// Shown without the reminder (S), trust changes nothing.
	tv := &protocol.TrustView{Scores: map[string]float64{"Party A": 0.1}, Order: protocol.Names(5)}
	got := reply(t, system(s, "g2", trust.CondS), protocol.RoundStart(1, 5)+"\n"+protocol.VoteTurn("Party A", "A1 B1 C1", tv))
	if !strings.HasSuffix(got, "VOTE: YES") {
		t.Errorf("S without the reminder: %q, want YES", got)
	}
}

func TestProposals(t *testing.T) {
	s := tiny(t)
	// The adversary proposes its ideal package (all options tie: the first).
	got := reply(t, system(s, "adversary", trust.CondNone), protocol.RoundStart(1, 5)+"\n"+protocol.ProposeTurn(1, s, nil))
	if !strings.HasSuffix(got, "PROPOSAL: A1 B1 C1") {
		t.Errorf("adversary proposes %q", got)
	}
	// g2 accepts 7 packages; with the others' stated priorities A1 (hb1)
	// and B1 (hb2) it picks the accepted package meeting both with the
	// best total: A1 B1 C2 (10; A1 B1 C1 scores 7).
	users := protocol.RoundStart(1, 5) + "\n" + protocol.Said("Party A", "My priorities: A1.") + "\n" + protocol.Said("Party B", "My priorities: B1.") + "\n\n" + protocol.ProposeTurn(1, s, nil)
	got = reply(t, system(s, "g2", trust.CondNone), users)
	if !strings.HasSuffix(got, "PROPOSAL: A1 B1 C2") || !strings.Contains(got, "My priorities: C2, A2.") {
		t.Errorf("g2 proposes %q", got)
	}
	// hb1 in round 1 asks 18 + 10: only... none reaches 28, so it falls
	// back to its ideal package, A1 B1 C2 (23).
	got = reply(t, system(s, "hb1", trust.CondNone), protocol.RoundStart(1, 5)+"\n"+protocol.ProposeTurn(1, s, nil))
	if !strings.HasSuffix(got, "PROPOSAL: A1 B1 C2") {
		t.Errorf("hb1 proposes %q", got)
	}
	if _, err := Reply("You are a helpful assistant.", nil, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("Reply to a non-party prompt: nil error")
	}
}

// TestAssess: g2 (Party D) saw two proposals. Party A proposed A1 B1 C1
// (7 for g2: meets its BATNA 7); g2 voted yes, Party B yes, Party E no.
// Party E proposed A2 B2 C1 (7: meets); g2 voted no.
//
//	Party A: coop 0.5 (no votes seen where g2 voted yes, A proposed it), rel 1 → signal 0.75
//	Party B: coop 1 (yes where g2 said yes), rel 0.5 (no proposals) → 0.75
//	Party E: coop 0 (no where g2 said yes), rel 1 → 0.5
//	Party C: no votes, no proposals → 0.5
func TestAssess(t *testing.T) {
	s := tiny(t)
	events := protocol.RoundStart(1, 5) + "\n" + protocol.Proposed("Party A", "A1 B1 C1") + "\n" + protocol.Voted("Party D", trust.VoteYes) + "\n" +
		protocol.Voted("Party B", trust.VoteYes) + "\n" + protocol.Voted("Party E", trust.VoteNo) + "\n" +
		protocol.Proposed("Party E", "A2 B2 C1") + "\n" + protocol.Voted("Party D", trust.VoteNo) + "\n"
	others := []string{"Party A", "Party B", "Party C", "Party E"}
	ff := reply(t, system(s, "g2", trust.CondS), events+protocol.GameOver(protocol.NoDeal(2))+"\n"+protocol.AssessTurn(protocol.AssessFreeForm, others))
	got, err := protocol.ParseFreeForm(ff, others)
	want := map[string]float64{"Party A": 0.75, "Party B": 0.75, "Party C": 0.5, "Party E": 0.5}
	if err != nil || len(got) != 4 {
		t.Fatalf("free-form %q: %v %v", ff, got, err)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("free-form %s = %v, want %v", k, got[k], v)
		}
	}
	rb := reply(t, system(s, "g2", trust.CondS), events+protocol.AssessTurn(protocol.AssessRubric, others))
	// Party E: coop 0 → 1, 1, rel 1 → 5, signal 0.5 → 3: (1+1+5+3)/4 = 2.5 → (2.5−1)/4 = 0.375.
	if !strings.Contains(rb, "Party E: 1 1 5 3") || !strings.Contains(rb, "Party B: 5 5 3 4") {
		t.Errorf("rubric %q", rb)
	}
}
