package multiparty

import (
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Round is one round of a game: a proposal and its votes.
type Round struct {
	Round int `json:"round"`
	// Proposer is the proposer's role.
	Proposer string `json:"proposer"`
	// Package is the proposal (option indices), nil when the proposer
	// made no valid proposal; Label is it written out ("A1 B3 …").
	Package []int  `json:"package,omitempty"`
	Label   string `json:"label,omitempty"`
	// Votes maps each role to trust.VoteYes, VoteNo or VoteAbstain (the
	// proposer votes yes).
	Votes map[string]string `json:"votes,omitempty"`
	Yes   int               `json:"yes"`
	// Passed: the package got VotesNeeded votes.
	Passed bool `json:"passed"`
	// Utility is each role's total for the package.
	Utility map[string]int `json:"utility,omitempty"`
	// Shown is the trust each voter was shown in the proposer (absent
	// when no trust is shown).
	Shown map[string]float64 `json:"shown,omitempty"`
}

// Outcome is a game's record (Rollout.Outcome): the deal, every round,
// and the trust before and after.
type Outcome struct {
	Scenario string `json:"scenario"`
	Type     string `json:"type"`
	// Trust are the series' trust settings.
	Trust trust.Settings `json:"trust"`
	// Game is the game's index in its series (0 first).
	Game int `json:"game"`
	// Names, Kinds and BATNA are per role.
	Names map[string]string `json:"names"`
	Kinds map[string]string `json:"kinds"`
	BATNA map[string]int    `json:"batna"`
	// Deal reports a package passed: Package in round DealRound.
	Deal      bool    `json:"deal"`
	Package   []int   `json:"package,omitempty"`
	Label     string  `json:"label,omitempty"`
	DealRound int     `json:"deal_round,omitempty"`
	Rounds    []Round `json:"rounds"`
	// Utility is each role's total for the deal (absent without a deal).
	Utility map[string]int `json:"utility,omitempty"`
	// Invalid lists the honest roles that voted for the deal although it
	// is below their BATNA.
	Invalid []string `json:"invalid,omitempty"`
	// Malformed counts each role's replies that could not be read (each
	// asked again once); Abstained its moves that were still unreadable.
	Malformed map[string]int `json:"malformed,omitempty"`
	Abstained map[string]int `json:"abstained,omitempty"`
	// TrustBefore and TrustAfter are the trust state (observer →
	// counterpart, by role) before and after the game; Shown what was
	// displayed, when it differs from TrustBefore (S0.5+P, Srand+P).
	TrustBefore map[string]map[string]float64 `json:"trust_before,omitempty"`
	TrustAfter  map[string]map[string]float64 `json:"trust_after,omitempty"`
	Shown       map[string]map[string]float64 `json:"shown,omitempty"`
	// Signals are this game's rubric or free-form signals; Counts its BRS
	// observations; AssessFailed the counterparts each observer gave no
	// readable assessment of.
	Signals      map[string]map[string]float64        `json:"signals,omitempty"`
	Counts       map[string]map[string]trust.Evidence `json:"counts,omitempty"`
	AssessFailed map[string][]string                  `json:"assess_failed,omitempty"`
}

// ParseOutcome reads a rollout's outcome.
func ParseOutcome(r *dataset.Rollout) (*Outcome, error) {
	if r.Outcome == "" {
		return nil, fmt.Errorf("multiparty: rollout %s has no outcome", r.RolloutID)
	}
	var o Outcome
	if err := json.Unmarshal([]byte(r.Outcome), &o); err != nil {
		return nil, fmt.Errorf("multiparty: rollout %s: outcome: %w", r.RolloutID, err)
	}
	return &o, nil
}

// Honest reports whether role is honest in o.
func (o *Outcome) Honest(role string) bool { return o.Kinds[role] != "adversary" }

// Adversary returns the adversary's role.
func (o *Outcome) Adversary() string {
	for r, k := range o.Kinds {
		if k == "adversary" {
			return r
		}
	}
	return ""
}

// RoleResult is a role's own outcome (RoleOutcome.Outcome).
type RoleResult struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	BATNA   int    `json:"batna"`
	Utility int    `json:"utility,omitempty"`
	// Surplus is utility − BATNA with a deal, 0 without.
	Surplus int `json:"surplus"`
	// VotedDeal: the role voted for the package that passed; Invalid: it
	// did so below its BATNA.
	VotedDeal bool `json:"voted_deal,omitempty"`
	Invalid   bool `json:"invalid,omitempty"`
}

// Result returns role's RoleResult.
func (o *Outcome) Result(role string) RoleResult {
	rr := RoleResult{Kind: o.Kinds[role], Name: o.Names[role], BATNA: o.BATNA[role]}
	if o.Deal {
		rr.Utility = o.Utility[role]
		rr.Surplus = rr.Utility - rr.BATNA
		last := o.Rounds[len(o.Rounds)-1]
		rr.VotedDeal = last.Votes[role] == trust.VoteYes
		rr.Invalid = rr.VotedDeal && o.Honest(role) && rr.Utility < rr.BATNA
	}
	return rr
}
