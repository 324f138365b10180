// Package trust holds the trust models of seed 002: pairwise trust
// vectors carried across the games of a series, updated after every game
// by the Beta Reputation System (BRS) from observed behaviour, or by an
// exponential moving average of rubric-based or free-form assessments;
// the prompt conditions of the seed's table 8; and the ranking measures
// (adversary detection, misidentification, trust separation).
//
// BRS (Jøsang and Ismail): observer i keeps, for each counterpart j,
// discounted counts of positive (r) and negative (s) observations. After a
// game with new counts r', s': r ← γ·r + r', s ← γ·s + s' (forgetting
// factor γ, 0.9 by default), and trust is the expected value of the Beta
// distribution, E = (r + 1)/(r + s + 2); with no evidence E = 0.5.
//
// Rubric and free-form assessment: after a game each party gives a signal
// x in [0, 1] per counterpart, and trust τ ← λ·τ + (1 − λ)·x (λ = 0.7 by
// default; the seed's sensitivity runs use 0.5 and 0.9). A larger λ keeps
// more of the history: trust moves more slowly away from the prior 0.5. A
// counterpart with no signal keeps its trust.
package trust

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Assessment methods.
const (
	MethodBRS      = "brs"
	MethodRubric   = "rubric"
	MethodFreeForm = "freeform"
)

// Methods lists the assessment methods.
var Methods = []string{MethodBRS, MethodRubric, MethodFreeForm}

// Prompt conditions (the seed's table 8, and its table 3's S→P).
const (
	// CondNone shows no trust and updates none.
	CondNone = "none"
	// CondS shows trust scores (system-level visibility, scores at each
	// decision).
	CondS = "s"
	// CondSToP shows trust as in S at the system level and adds the
	// guidance reminder at each decision only: trust formed without
	// guidance, used with it (table 3's S→P).
	CondSToP = "s_to_p"
	// CondSP adds guidance to the system-level text and a reminder at each
	// decision.
	CondSP = "s_p"
	// CondS05P shows every trust score as 0.5 with guidance; nothing is
	// updated (a control).
	CondS05P = "s05_p"
	// CondSRandP shows random trust scores, drawn afresh every game, with
	// guidance; nothing is updated (a control).
	CondSRandP = "srand_p"
)

// Conditions lists the prompt conditions.
var Conditions = []string{CondNone, CondS, CondSToP, CondSP, CondS05P, CondSRandP}

// Defaults of the trust settings.
const (
	DefaultLambda = 0.7
	DefaultGamma  = 0.9
	DefaultPrior  = 0.5
)

// Settings are a series' trust settings.
type Settings struct {
	// Method is how trust is assessed after a game: brs (the Beta
	// Reputation System, from observed proposals and votes), rubric or
	// freeform (each party's own assessment, folded in by an EMA).
	Method string `json:"method" yaml:"method"`
	// Condition is the prompt condition (the seed's table 8): none, s,
	// s_to_p, s_p, s05_p or srand_p.
	Condition string `json:"condition" yaml:"condition"`
	// Lambda is the EMA weight λ of the old trust (rubric, freeform):
	// τ ← λ·τ + (1 − λ)·signal.
	Lambda float64 `json:"lambda" yaml:"lambda"`
	// Gamma is BRS's forgetting factor γ: r ← γ·r + r', s ← γ·s + s'.
	Gamma float64 `json:"gamma" yaml:"gamma"`
	// Prior is the trust before any game (rubric, freeform; BRS starts
	// from no evidence, E = 0.5).
	Prior float64 `json:"prior" yaml:"prior"`
}

// DefaultSettings are BRS under S+P with the seed's defaults.
func DefaultSettings() Settings {
	return Settings{Method: MethodBRS, Condition: CondSP, Lambda: DefaultLambda, Gamma: DefaultGamma, Prior: DefaultPrior}
}

// Validate checks the settings; errors name keys relative to them.
func (s Settings) Validate() error {
	var errs []string
	if !slices.Contains(Methods, s.Method) {
		errs = append(errs, fmt.Sprintf("key method: %q is not one of %s", s.Method, strings.Join(Methods, ", ")))
	}
	if !slices.Contains(Conditions, s.Condition) {
		errs = append(errs, fmt.Sprintf("key condition: %q is not one of %s", s.Condition, strings.Join(Conditions, ", ")))
	}
	if !(s.Lambda >= 0 && s.Lambda < 1) {
		errs = append(errs, fmt.Sprintf("key lambda: must be in [0, 1), got %g", s.Lambda))
	}
	if !(s.Gamma > 0 && s.Gamma <= 1) {
		errs = append(errs, fmt.Sprintf("key gamma: must be in (0, 1], got %g", s.Gamma))
	}
	if !(s.Prior >= 0 && s.Prior <= 1) {
		errs = append(errs, fmt.Sprintf("key prior: must be in [0, 1], got %g", s.Prior))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Shown reports whether the condition shows trust scores to the parties.
func (s Settings) Shown() bool { return s.Condition != CondNone }

// SystemGuidance reports whether the system-level text carries guidance.
func (s Settings) SystemGuidance() bool {
	return s.Condition == CondSP || s.Condition == CondS05P || s.Condition == CondSRandP
}

// Reminder reports whether each decision carries the guidance reminder.
func (s Settings) Reminder() bool {
	return s.Condition == CondSToP || s.SystemGuidance()
}

// Updates reports whether trust is assessed and updated after each game.
func (s Settings) Updates() bool {
	return s.Condition == CondS || s.Condition == CondSToP || s.Condition == CondSP
}

// Label names the condition as the seed's tables do: "No trust",
// "S0.5+P", "Srand+P", or the method and condition ("BRS (S+P)").
func (s Settings) Label() string {
	switch s.Condition {
	case CondNone:
		return "No trust"
	case CondS05P:
		return "S0.5+P"
	case CondSRandP:
		return "Srand+P"
	}
	m := map[string]string{MethodBRS: "BRS", MethodRubric: "Rubric", MethodFreeForm: "FF"}[s.Method]
	c := map[string]string{CondS: "S", CondSToP: "S→P", CondSP: "S+P"}[s.Condition]
	return fmt.Sprintf("%s (%s)", m, c)
}

// Evidence is BRS's discounted counts of positive and negative
// observations of one counterpart.
type Evidence struct {
	R float64 `json:"r"`
	S float64 `json:"s"`
}

// BRSUpdate folds one game's counts into e: r ← γ·r + r', s ← γ·s + s'.
func BRSUpdate(e Evidence, r, s, gamma float64) Evidence {
	return Evidence{R: gamma*e.R + r, S: gamma*e.S + s}
}

// Expectation is the Beta expectation (r + 1)/(r + s + 2).
func (e Evidence) Expectation() float64 { return (e.R + 1) / (e.R + e.S + 2) }

// EMA folds one signal x into trust t: λ·t + (1 − λ)·x.
func EMA(t, x, lambda float64) float64 { return lambda*t + (1-lambda)*x }

// StateVersion is the version of State's JSON.
const StateVersion = 1

// State is what carries from one game of a series to the next: the
// settings, the parties' display names, and each observer's trust in (and,
// under BRS, evidence about) each counterpart, keyed by role.
type State struct {
	Version  int `json:"version"`
	Settings `json:"settings"`
	// Names maps each role to the name the parties know it by ("Party C"):
	// fixed for the whole series, so trust follows the agent.
	Names map[string]string `json:"names"`
	// Games counts the games played.
	Games int `json:"games"`
	// Trust[i][j] is observer i's trust in counterpart j.
	Trust map[string]map[string]float64 `json:"trust"`
	// BRS[i][j] is observer i's evidence about j (method brs).
	BRS map[string]map[string]Evidence `json:"brs,omitempty"`
}

// NewState is the state before a series' first game: every trust at the
// prior (0.5 under BRS), no evidence.
func NewState(s Settings, names map[string]string) *State {
	st := &State{Version: StateVersion, Settings: s, Names: names, Trust: map[string]map[string]float64{}}
	prior := s.Prior
	if s.Method == MethodBRS {
		prior = Evidence{}.Expectation()
		st.BRS = map[string]map[string]Evidence{}
	}
	for i := range names {
		st.Trust[i] = map[string]float64{}
		if st.BRS != nil {
			st.BRS[i] = map[string]Evidence{}
		}
		for j := range names {
			if i != j {
				st.Trust[i][j] = prior
				if st.BRS != nil {
					st.BRS[i][j] = Evidence{}
				}
			}
		}
	}
	return st
}

// ParseState decodes a state, checking its version and settings.
func ParseState(b []byte) (*State, error) {
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("trust.ParseState: %w", err)
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("trust.ParseState: version %d, want %d", st.Version, StateVersion)
	}
	if err := st.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("trust.ParseState: %w", err)
	}
	if len(st.Names) == 0 {
		return nil, fmt.Errorf("trust.ParseState: no party names")
	}
	return &st, nil
}

// Clone returns a deep copy.
func (st *State) Clone() *State {
	b, _ := json.Marshal(st)
	var c State
	_ = json.Unmarshal(b, &c)
	return &c
}

// ApplyBRS folds one game's counts (observer → counterpart → r', s') into
// the evidence and sets trust to its expectation. Pairs without counts
// are discounted as a game with none.
func (st *State) ApplyBRS(counts map[string]map[string]Evidence) {
	for i, row := range st.BRS {
		for j, e := range row {
			c := counts[i][j]
			e = BRSUpdate(e, c.R, c.S, st.Gamma)
			row[j] = e
			st.Trust[i][j] = e.Expectation()
		}
	}
}

// ApplyEMA folds one game's signals (observer → counterpart → x in
// [0, 1]) into trust; a pair without a signal keeps its trust.
func (st *State) ApplyEMA(signals map[string]map[string]float64) {
	for i, row := range signals {
		for j, x := range row {
			if old, ok := st.Trust[i][j]; ok && !math.IsNaN(x) {
				st.Trust[i][j] = EMA(old, math.Min(math.Max(x, 0), 1), st.Lambda)
			}
		}
	}
}
