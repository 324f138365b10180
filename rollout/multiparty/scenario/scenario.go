// Package scenario is the scenario of seed 002's five-party negotiation
// ("Trust–Agreement Gap"): issues with options, five parties with private
// option scores and a BATNA threshold each, one of them a covert adversary
// whose BATNA lies above every package (it prefers no agreement). It
// validates scenarios by enumerating every package, measures their
// difficulty (the set properties of the seed's table 5) and generates
// seeded scenario sets of the two types, 2HB+2G and 1HB+3G.
//
// A package is one option per issue; its utility to a party is the sum of
// the party's scores of its options. A package is feasible for a party
// when its utility is at or above the party's BATNA, and honest-feasible
// when it is feasible for every honest party (every party but the
// adversary).
package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Scenario types: the composition of the five parties.
const (
	// Type2HB2G is two hard bargainers, two general agents and the adversary.
	Type2HB2G = "2hb2g"
	// Type1HB3G is one hard bargainer, three general agents and the adversary.
	Type1HB3G = "1hb3g"
)

// Types lists the scenario types.
var Types = []string{Type2HB2G, Type1HB3G}

// Party kinds.
const (
	// KindHardBargainer pushes for packages well above its BATNA.
	KindHardBargainer = "hard_bargainer"
	// KindGeneral seeks a deal that works for everyone.
	KindGeneral = "general"
	// KindAdversary covertly prefers no agreement.
	KindAdversary = "adversary"
)

// RoleAdversary is the adversary's role in every scenario.
const RoleAdversary = "adversary"

// Limits on a scenario's shape.
const (
	MaxIssues  = 8
	MaxOptions = 8
	MaxScore   = 1000
)

// Issue is one issue under negotiation and its options.
type Issue struct {
	// ID is the issue's label ("A"); option k of issue A is "A<k+1>".
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Options []string `json:"options"`
}

// Party is one party: its role (hb1, g2, adversary, …), its kind, the
// stakeholder it represents, and its private scores and BATNA.
type Party struct {
	Role        string `json:"role"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Scores[i][k] is the party's score of option k of issue i.
	Scores [][]int `json:"scores"`
	// BATNA is the least total it accepts: without a deal it gets this.
	BATNA int `json:"batna"`
}

// Honest reports whether the party is not the adversary.
func (p Party) Honest() bool { return p.Kind != KindAdversary }

// Scenario is one negotiation: a prompt row's Scenario (as JSON).
type Scenario struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Issues      []Issue `json:"issues"`
	Parties     []Party `json:"parties"`
	// Seed is the generator seed the scenario was drawn with (0: written by hand).
	Seed int64 `json:"seed,omitempty"`
}

// RolesOf returns the roles of a scenario type in their fixed order, and
// the kind of each.
func RolesOf(typ string) (roles, kinds []string, err error) {
	switch typ {
	case Type2HB2G:
		return []string{"hb1", "hb2", "g1", "g2", RoleAdversary},
			[]string{KindHardBargainer, KindHardBargainer, KindGeneral, KindGeneral, KindAdversary}, nil
	case Type1HB3G:
		return []string{"hb1", "g1", "g2", "g3", RoleAdversary},
			[]string{KindHardBargainer, KindGeneral, KindGeneral, KindGeneral, KindAdversary}, nil
	}
	return nil, nil, fmt.Errorf("unknown scenario type %q (want %s)", typ, strings.Join(Types, " or "))
}

// Parse decodes a scenario from JSON, rejecting unknown fields, and
// validates it.
func Parse(b []byte) (*Scenario, error) {
	var s Scenario
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario.Parse: malformed scenario JSON: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario.Parse: %w", err)
	}
	return &s, nil
}

// Sizes returns the number of options of each issue.
func (s *Scenario) Sizes() []int {
	out := make([]int, len(s.Issues))
	for i, is := range s.Issues {
		out[i] = len(is.Options)
	}
	return out
}

// Packages is the number of packages (the product of the option counts).
func (s *Scenario) Packages() int {
	n := 1
	for _, is := range s.Issues {
		n *= len(is.Options)
	}
	return n
}

// Party returns the party of role, or nil.
func (s *Scenario) Party(role string) *Party {
	for i := range s.Parties {
		if s.Parties[i].Role == role {
			return &s.Parties[i]
		}
	}
	return nil
}

// Roles returns the parties' roles in scenario order.
func (s *Scenario) Roles() []string {
	out := make([]string, len(s.Parties))
	for i, p := range s.Parties {
		out[i] = p.Role
	}
	return out
}

// Honest returns the indices of the honest parties.
func (s *Scenario) Honest() []int {
	var out []int
	for i, p := range s.Parties {
		if p.Honest() {
			out = append(out, i)
		}
	}
	return out
}

// Utility is party p's total for pkg (one option index per issue).
func (s *Scenario) Utility(p int, pkg []int) int {
	u := 0
	for i, k := range pkg {
		u += s.Parties[p].Scores[i][k]
	}
	return u
}

// MaxUtility is the best total party p can get from any package.
func (s *Scenario) MaxUtility(p int) int {
	u := 0
	for _, row := range s.Parties[p].Scores {
		u += slices.Max(row)
	}
	return u
}

// Validate checks the scenario's shape and that it can be played: the
// parties of its type (no role or name twice), a well-formed score table
// for every party, every honest BATNA reachable by some package, at least
// one honest-feasible package, and an adversary whose BATNA lies above
// every package. All problems are returned, each naming the scenario and
// the party or issue.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("scenario %q: "+format, append([]any{s.ID}, args...)...))
	}
	if strings.TrimSpace(s.ID) == "" {
		bad("empty id")
	}
	roles, kinds, err := RolesOf(s.Type)
	if err != nil {
		bad("%v", err)
	}
	if strings.TrimSpace(s.Title) == "" {
		bad("empty title")
	}
	s.validateIssues(bad)
	shapeOK := len(errs) == 0
	s.validateParties(roles, kinds, bad)
	if len(errs) > 0 || !shapeOK {
		return errors.Join(errs...)
	}
	// The table is well formed: check what enumeration says.
	for i, p := range s.Parties {
		best := s.MaxUtility(i)
		switch {
		case p.Honest() && p.BATNA > best:
			bad("party %s (%s): BATNA %d is above every package (its best package scores %d)", p.Role, p.Name, p.BATNA, best)
		case !p.Honest() && p.BATNA <= best:
			bad("party %s (%s): the adversary must prefer no agreement, but its BATNA %d does not exceed its best package (%d)", p.Role, p.Name, p.BATNA, best)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if n := CountFeasible(s, s.Honest()); n == 0 {
		bad("no feasible package: none of the %d packages meets the BATNA of every honest party", s.Packages())
	}
	return errors.Join(errs...)
}

func (s *Scenario) validateIssues(bad func(string, ...any)) {
	if len(s.Issues) == 0 || len(s.Issues) > MaxIssues {
		bad("%d issues, want 1 to %d", len(s.Issues), MaxIssues)
	}
	seen := map[string]bool{}
	for i, is := range s.Issues {
		if strings.TrimSpace(is.ID) == "" || strings.ContainsAny(is.ID, " \t\n:,") {
			bad("issue %d: id %q must be a short label without spaces", i, is.ID)
		}
		if seen[strings.ToUpper(is.ID)] {
			bad("issue %d: id %q repeated", i, is.ID)
		}
		seen[strings.ToUpper(is.ID)] = true
		if strings.TrimSpace(is.Name) == "" {
			bad("issue %s: empty name", is.ID)
		}
		if len(is.Options) < 2 || len(is.Options) > MaxOptions {
			bad("issue %s: %d options, want 2 to %d", is.ID, len(is.Options), MaxOptions)
		}
		for k, o := range is.Options {
			if strings.TrimSpace(o) == "" {
				bad("issue %s: option %d is empty", is.ID, k+1)
			}
		}
	}
}

func (s *Scenario) validateParties(roles, kinds []string, bad func(string, ...any)) {
	if roles != nil && len(s.Parties) != len(roles) {
		bad("%d parties, a %s scenario has %d (%s)", len(s.Parties), s.Type, len(roles), strings.Join(roles, ", "))
	}
	seenRole, seenName := map[string]bool{}, map[string]bool{}
	for i, p := range s.Parties {
		who := fmt.Sprintf("party %d (%s)", i, p.Role)
		if seenRole[p.Role] {
			bad("%s: duplicate party: role %q appears twice", who, p.Role)
		}
		seenRole[p.Role] = true
		name := strings.ToLower(strings.TrimSpace(p.Name))
		if name == "" {
			bad("%s: empty name", who)
		} else if seenName[name] {
			bad("%s: duplicate party: name %q appears twice", who, p.Name)
		}
		seenName[name] = true
		if roles != nil {
			if k := slices.Index(roles, p.Role); k < 0 {
				bad("%s: role %q is not one of a %s scenario's (%s)", who, p.Role, s.Type, strings.Join(roles, ", "))
			} else if p.Kind != kinds[k] {
				bad("%s: kind %q, want %q", who, p.Kind, kinds[k])
			}
		}
		s.validateScores(who, p, bad)
	}
}

// validateScores checks one party's score table against the issues.
func (s *Scenario) validateScores(who string, p Party, bad func(string, ...any)) {
	if len(p.Scores) != len(s.Issues) {
		bad("%s: malformed score table: %d rows, want one per issue (%d)", who, len(p.Scores), len(s.Issues))
		return
	}
	for i, row := range p.Scores {
		if len(row) != len(s.Issues[i].Options) {
			bad("%s: malformed score table: issue %s has %d scores, want %d (one per option)", who, s.Issues[i].ID, len(row), len(s.Issues[i].Options))
			continue
		}
		for k, v := range row {
			if v < 0 || v > MaxScore {
				bad("%s: malformed score table: issue %s option %d scores %d, want 0 to %d", who, s.Issues[i].ID, k+1, v, MaxScore)
			}
		}
	}
	if p.BATNA < 0 {
		bad("%s: BATNA %d is negative", who, p.BATNA)
	}
}

// OptionLabel is the label of option k of issue i ("C3").
func (s *Scenario) OptionLabel(i, k int) string { return fmt.Sprintf("%s%d", s.Issues[i].ID, k+1) }

// PackageLabel renders pkg as "A1 B3 C2 D4 E1".
func (s *Scenario) PackageLabel(pkg []int) string {
	parts := make([]string, len(pkg))
	for i, k := range pkg {
		parts[i] = s.OptionLabel(i, k)
	}
	return strings.Join(parts, " ")
}
