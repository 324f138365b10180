package endowment

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// TournamentHook is what the game adds to `parley tournament`, seed 001's
// round robin: the holder and requester seats, the two framings as the
// conditions (each scenario row is played under its own framing), the
// prompt files frozen with the tournament, and seed 001's analysis (the
// share matrix, table 5 with per-role Elo, the variance budget, cohorts,
// turn-1 refusal, the framing contrast, table 8's sequential R² with the
// requester's message features, the audit curve and cumulative
// concessions).
var TournamentHook = &rollout.Tournament{
	Seats:      [2]string{RoleHolder, RoleRequester},
	Conditions: []string{FramingSingular, FramingGroup},
	Condition: func(p dataset.Prompt) (string, error) {
		sc, err := ParseScenario(p.Scenario)
		return sc.Framing, err
	},
	Files: func(section any) ([]rollout.File, string, error) {
		c, err := rollout.SectionOf[Config](section)
		if err != nil {
			return nil, "", fmt.Errorf("endowment: tournament files: %w", err)
		}
		dir := c.PromptsDir
		p, err := LoadPrompts(dir)
		if err != nil {
			return nil, "", err
		}
		files, err := p.Files()
		where := "the embedded prompts"
		if dir != "" {
			where = dir
		}
		return files, where, err
	},
	Analysis: func() any { return DefaultTournamentSettings() },
	Report:   tournamentReport,
}

// TournamentSettings are the analysis settings of a tournament file: its
// analysis and cohorts keys.
type TournamentSettings struct {
	// Analysis sets the report's statistics.
	Analysis TournamentAnalysis `yaml:"analysis"`
	// Cohorts are the subsets of table 4, by agent names.
	Cohorts []Cohort `yaml:"cohorts"`
}

// TournamentAnalysis sets a tournament report's statistics.
type TournamentAnalysis struct {
	// Bootstrap resamples at the ordered-pairing level (default 2,000).
	Bootstrap int `yaml:"bootstrap"`
	// Splits of the split-half held-out coefficient (default 2,000).
	Splits int `yaml:"splits"`
	// AuditDraws per probe count k (default 800); AuditMaxK the largest k
	// (default 30, at most an agent's holder games − 1).
	AuditDraws int `yaml:"audit_draws"`
	AuditMaxK  int `yaml:"audit_max_k"`
	// EloPermutations of the game order averaged over (default 1,000);
	// EloK and EloStart the rating constants (32, 1500).
	EloPermutations int     `yaml:"elo_permutations"`
	EloK            float64 `yaml:"elo_k"`
	EloStart        float64 `yaml:"elo_start"`
	// WinThreshold: the requester wins a game whose share exceeds it, the
	// holder one whose share is below it (default 0.5).
	WinThreshold float64 `yaml:"win_threshold"`
	// TOSTBounds are the equivalence bounds in pooled-SD units (default
	// 0.1, 0.2, 0.3).
	TOSTBounds []float64 `yaml:"tost_bounds"`
}

// Cohort is a subset of the agents for table 4.
type Cohort struct {
	Name string `yaml:"name"`
	// DropHolders are left out as holders, DropRequesters as requesters,
	// Drop in both roles.
	DropHolders    []string `yaml:"drop_holders"`
	DropRequesters []string `yaml:"drop_requesters"`
	Drop           []string `yaml:"drop"`
}

// DefaultTournamentSettings are the settings before a tournament file is
// read.
func DefaultTournamentSettings() *TournamentSettings {
	return &TournamentSettings{Analysis: TournamentAnalysis{Bootstrap: 2000, Splits: 2000, AuditDraws: 800, AuditMaxK: 30,
		EloPermutations: 1000, EloK: 32, EloStart: 1500, WinThreshold: 0.5, TOSTBounds: []float64{0.1, 0.2, 0.3}}}
}

// Validate checks the settings against the tournament's agents; errors
// name the key.
func (t *TournamentSettings) Validate(agents []string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	names := map[string]bool{}
	for _, a := range agents {
		names[a] = true
	}
	for i, c := range t.Cohorts {
		key := fmt.Sprintf("cohorts[%d]", i)
		if strings.TrimSpace(c.Name) == "" {
			bad(key+".name", "must not be empty")
		}
		for _, l := range [][]string{c.DropHolders, c.DropRequesters, c.Drop} {
			for _, n := range l {
				if !names[n] {
					bad(key, "names agent %q, which is not in agents", n)
				}
			}
		}
	}
	an := t.Analysis
	if an.Bootstrap < 0 || an.Splits < 0 || an.AuditDraws < 0 || an.EloPermutations < 1 || an.EloK <= 0 || an.AuditMaxK < 1 {
		bad("analysis", "bootstrap, splits and audit_draws must be ≥ 0, elo_permutations and audit_max_k ≥ 1, elo_k > 0")
	}
	if !(an.WinThreshold > 0 && an.WinThreshold < 1) {
		bad("analysis.win_threshold", "must be in (0, 1)")
	}
	for i, b := range an.TOSTBounds {
		if !(b > 0) {
			bad(fmt.Sprintf("analysis.tost_bounds[%d]", i), "must be positive")
		}
	}
	return errors.Join(errs...)
}

// tournamentView is a tournament report's input with the game's section
// and settings typed.
type tournamentView struct {
	rollout.TournamentReport
	cfg      *Config
	settings *TournamentSettings
}

func newTournamentView(in rollout.TournamentReport) (*tournamentView, error) {
	cfg, err := rollout.SectionOf[Config](in.Section)
	if err != nil {
		return nil, fmt.Errorf("endowment: a tournament report: %w", err)
	}
	settings, ok := in.Analysis.(*TournamentSettings)
	if !ok {
		return nil, fmt.Errorf("endowment: a tournament report needs its analysis settings, got %T", in.Analysis)
	}
	return &tournamentView{TournamentReport: in, cfg: cfg, settings: settings}, nil
}

// index is the agent's position, or -1.
func (v *tournamentView) index(name string) int {
	for i, a := range v.Agents {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// tournamentReport is TournamentHook's Report: the analysis and the
// report drawn from it.
func tournamentReport(in rollout.TournamentReport) (string, any, error) {
	v, err := newTournamentView(in)
	if err != nil {
		return "", nil, err
	}
	a, err := v.analyze()
	if err != nil {
		return "", nil, err
	}
	w := &writer{s: v, a: a, out: in.Dir}
	w.all(in.Name, in.FilesSHA256)
	if w.err != nil {
		return "", nil, w.err
	}
	return w.md.String(), jsonSafe(a), nil
}

// Files returns the prompt set's files in PromptFiles order: what a
// tournament freezes beside its games.
func (p *Prompts) Files() ([]rollout.File, error) {
	src, err := p.fs()
	if err != nil {
		return nil, fmt.Errorf("endowment.Prompts.Files: %w", err)
	}
	out := make([]rollout.File, 0, len(PromptFiles))
	for _, name := range PromptFiles {
		b, err := fs.ReadFile(src, name)
		if err != nil {
			return nil, fmt.Errorf("endowment.Prompts.Files: %w", err)
		}
		out = append(out, rollout.File{Name: name, Data: b})
	}
	return out, nil
}
