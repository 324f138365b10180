package endowment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
)

// Outcome is a game's outcome: the rollout's Outcome as JSON.
type Outcome struct {
	Endowment float64 `json:"endowment"`
	Framing   string  `json:"framing"`
	Cause     string  `json:"cause,omitempty"`
	// Transferred is the money given; Balance what the holder kept;
	// Share = Transferred / Endowment.
	Transferred float64 `json:"transferred"`
	Balance     float64 `json:"balance"`
	Share       float64 `json:"share"`
	// Ended is EndTurnLimit, EndFinalRefusal or EndExhausted.
	Ended string `json:"ended"`
	// HolderTurns is the number of holder replies.
	HolderTurns int `json:"holder_turns"`
	// Turn1Refusal: nothing moved in the holder's first reply.
	Turn1Refusal bool `json:"turn1_refusal"`
	// FirstConcession is the first holder turn that moved money, or nil.
	FirstConcession *Concession `json:"first_concession"`
	// Cumulative[t-1] is the money given by the end of holder turn t.
	Cumulative []float64 `json:"cumulative"`
	// Unparsed counts holder turns whose verdict could not be read.
	Unparsed int `json:"unparsed"`
	// Pending are the conditional commitments left at the end (moved nothing).
	Pending []Pending `json:"pending,omitempty"`
	// Ledger holds one entry per holder turn.
	Ledger []Entry `json:"ledger"`
	// Traces are the private deliberations, in turn order.
	Traces []TraceRecord `json:"traces,omitempty"`
	// Views holds each role's whole conversation as it saw it: its system
	// prompt, the other side's visible messages (as user) and its own
	// turns as sampled (as assistant, private traces included). Exports
	// use it to write a role's chat (export.Options.Role in dataset/export).
	Views map[string][]llm.Message `json:"views,omitempty"`
	// PromptsSHA256 is the hash of the prompt files the game was played
	// with (Prompts.SHA256).
	PromptsSHA256 string `json:"prompts_sha256"`
}

// Concession is a holder turn that moved money.
type Concession struct {
	Turn   int     `json:"turn"`
	Amount float64 `json:"amount"`
}

// TraceRecord is one turn's private deliberation.
type TraceRecord struct {
	Role string `json:"role"`
	Turn int    `json:"turn"`
	Text string `json:"text"`
}

func (o *Outcome) addTrace(role string, turn int, raw string) {
	if t := Trace(raw); t != "" {
		o.Traces = append(o.Traces, TraceRecord{Role: role, Turn: turn, Text: t})
	}
}

// finish fills the summary fields from the ledger.
func (o *Outcome) finish(l *Ledger) {
	o.Ledger = l.Entries
	o.Pending = l.Pending
	o.Transferred = l.Transferred()
	o.Balance = l.Balance
	if o.Endowment > 0 {
		o.Share = o.Transferred / o.Endowment
	}
	o.HolderTurns = len(l.Entries)
	o.Turn1Refusal = len(l.Entries) > 0 && l.Entries[0].Moved == 0
	for _, e := range l.Entries {
		if e.Moved > 0 {
			o.FirstConcession = &Concession{Turn: e.Turn, Amount: e.Moved}
			break
		}
	}
}

// CumulativeAt is the money given by the end of holder turn t (from 1);
// a game that ended earlier keeps its final amount.
func (o *Outcome) CumulativeAt(t int) float64 {
	if len(o.Cumulative) == 0 || t < 1 {
		return 0
	}
	return o.Cumulative[min(t, len(o.Cumulative))-1]
}

// ParseOutcome decodes a rollout's outcome.
func ParseOutcome(s string) (*Outcome, error) {
	if s == "" {
		return nil, errors.New("endowment: the rollout has no outcome")
	}
	var o Outcome
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("endowment: outcome: %w", err)
	}
	if !(o.Endowment > 0) || math.IsNaN(o.Share) || o.Share < 0 || o.Share > 1 {
		return nil, fmt.Errorf("endowment: outcome: endowment %g, share %g out of range", o.Endowment, o.Share)
	}
	return &o, nil
}

// RolloutOutcome returns the outcome of a finished endowment rollout, or
// an error for a failed one or another game's.
func RolloutOutcome(r *dataset.Rollout) (*Outcome, error) {
	if r.Env != "" && r.Env != Name {
		return nil, fmt.Errorf("endowment: rollout %s is of game %q", r.RolloutID, r.Env)
	}
	if r.Failed {
		return nil, fmt.Errorf("endowment: rollout %s failed: %s", r.RolloutID, r.Error)
	}
	return ParseOutcome(r.Outcome)
}
