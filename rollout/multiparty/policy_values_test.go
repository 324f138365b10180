package multiparty_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// votePolicy plays g1 with a fixed vote policy: yes with probability p,
// or by its vote hint when hint is set; its proposals are unreadable, as a
// random-weight model's are.
type votePolicy struct {
	p    float64
	hint bool
	rng  *rand.Rand
}

func (v *votePolicy) Turn(_ context.Context, _ string, msgs []llm.Message, _ rollout.TurnOptions) (rollout.Reply, error) {
	last := msgs[len(msgs)-1].Content
	text := "hmm"
	if strings.Contains(last, "vote on") {
		yes := v.rng.Float64() < v.p
		if v.hint {
			yes = strings.Contains(last, "it meets your BATNA")
		}
		text = "VOTE: NO"
		if yes {
			text = "VOTE: YES"
		}
	}
	return rollout.Reply{Text: text, Raw: text, Tokens: 2, FinishReason: "stop"}, nil
}

// TestVotePolicyValues plays the committed 2HB+2G set as
// configs/multiparty-tiny.yaml does (g1 against the scripted parties, six
// rounds, series of five, BRS S+P, hints, no penalty) with fixed vote
// policies, and checks the premises that config's learning run rests on:
// voting yes more often raises g1's mean surplus and the honest parties'
// mean, reading the hint does better still for g1; and a deal g1's yes
// passes is good for the honest parties as a whole (the shared reward,
// honest_mean) more often than for g1 itself, which is not good every time.
// On the sets shipped before they were regenerated to the seed's table 5,
// 104 deals were good for g1 in 64 and for the honest mean in all 104; on
// the regenerated sets (general agents' ideals are honest-feasible, so
// deals come easier) 175 deals, good for g1 in 157, for the honest mean in
// 168.
func TestVotePolicyValues(t *testing.T) {
	cfg := multiparty.DefaultConfig()
	cfg.MaxRounds, cfg.SeriesLength, cfg.VoteHints, cfg.InvalidPenalty = 6, 5, true, 0
	cfg.Trust = trust.Settings{Method: trust.MethodBRS, Condition: trust.CondSP, Lambda: 0.7, Gamma: 0.9, Prior: 0.5}
	cfg.Scripted = []string{"hb1", "hb2", "g2", "adversary"}
	set := fixedSet(t, "2hb2g")
	var deals, ownGood, sharedGood int
	value := func(pol votePolicy) (self, honest float64) {
		n := 0
		for _, p := range set {
			for seed := range int64(2) {
				var state []byte
				for g := range int64(5) {
					pol.rng = rand.New(rand.NewPCG(uint64(seed), uint64(g)))
					var rec *dataset.Rollout
					rec, _, state = playSeed(t, cfg, p, &pol, state, 100*seed+g)
					res, err := multiparty.NewScorer(0, multiparty.RewardOwn).Judge(context.Background(), rec)
					if err != nil {
						t.Fatal(err)
					}
					self, honest, n = self+res.Roles["g1"], honest+res.Score, n+1
					if rec.Agreed && pol.p == 1 {
						deals++
						if res.Roles["g1"] >= 0 {
							ownGood++
						}
						if res.Score >= 0 {
							sharedGood++
						}
					}
				}
			}
		}
		return self / float64(n), honest / float64(n)
	}
	policies := []struct {
		name string
		pol  votePolicy
	}{
		{"never", votePolicy{p: 0}},
		{"half", votePolicy{p: 0.5}},
		{"always", votePolicy{p: 1}},
		{"by hint", votePolicy{hint: true}},
	}
	self := make([]float64, len(policies))
	honest := make([]float64, len(policies))
	for i, tt := range policies {
		self[i], honest[i] = value(tt.pol)
		t.Logf("%-10s g1 surplus %6.2f  honest mean %6.2f", tt.name, self[i], honest[i])
	}
	if self[0] != 0 || honest[0] != 0 {
		t.Errorf("never voting yes: g1 %g, honest %g, want 0 and 0 (no deal passes without g1)", self[0], honest[0])
	}
	for i := 1; i < 3; i++ {
		if self[i] <= self[i-1] || honest[i] <= honest[i-1] {
			t.Errorf("voting yes more often (%s → %s) does not raise g1's surplus (%.2f → %.2f) and the honest mean (%.2f → %.2f)",
				policies[i-1].name, policies[i].name, self[i-1], self[i], honest[i-1], honest[i])
		}
	}
	if self[3] <= self[2] {
		t.Errorf("voting by the hint gives g1 %.2f, always voting yes %.2f: want more", self[3], self[2])
	}
	t.Logf("always voting yes: %d deals, good for g1 in %d, for the honest mean in %d", deals, ownGood, sharedGood)
	if deals == 0 || ownGood == deals || sharedGood <= ownGood {
		t.Errorf("always voting yes: %d deals, good for g1 in %d, for the honest mean in %d: want more deals good for the honest mean than for g1, and not every one good for g1", deals, ownGood, sharedGood)
	}
}
