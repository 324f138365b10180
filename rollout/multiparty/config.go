package multiparty

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Config is the game's section, game.multiparty.
type Config struct {
	// MaxRounds bounds a game: a round is one proposal and its votes.
	MaxRounds int `yaml:"max_rounds"`
	// VotesNeeded is the number of votes (of five) a package needs.
	VotesNeeded int `yaml:"votes_needed"`
	// Trust are the trust settings of a game (and of every series, unless
	// Conditions lists several).
	Trust trust.Settings `yaml:"trust"`
	// Conditions, when set, lists the trust conditions a series plan (parley
	// series, series training) lays out, each "method/condition" (brs/s_p,
	// rubric/s, freeform/s_to_p, none, s05_p, srand_p); the method defaults
	// to trust.method.
	Conditions []string `yaml:"conditions"`
	// SeriesLength is the number of games in a series.
	SeriesLength int `yaml:"series_length"`
	// Scripted lists roles (hb1, hb2, g1, g2, g3, adversary) played by the
	// game's own scripted parties instead of a model.
	Scripted []string `yaml:"scripted"`
	// InvalidPenalty is subtracted from the reward of an honest party that
	// voted for a deal below its BATNA (an invalid agreement).
	InvalidPenalty float64 `yaml:"invalid_penalty"`
	// Reward is what an honest party is paid: own (its utility above BATNA,
	// seed 002's incentive) or honest_mean (the honest parties' mean utility
	// above BATNA, a shared reward); either less its invalid penalty.
	Reward string `yaml:"reward"`
	// AssessTokens bounds an assessment reply (0: sampling.max_tokens).
	AssessTokens int `yaml:"assess_tokens"`
	// VoteHints tells a party, when it votes, its total for the package
	// and whether the package meets its BATNA (decision support the seed's
	// agents do not get; off by default).
	VoteHints bool `yaml:"vote_hints"`
	// LenientVotes reads a reply without a VOTE line as YES when it holds
	// a cooperative word (protocol.CooperativeWords) and NO otherwise, so
	// it is never malformed: for random-weight models that cannot write the
	// format (the prompts make multiparty-model collects for the tiny
	// model's cold start); off by default.
	LenientVotes bool `yaml:"lenient_votes"`
}

// DefaultConfig is the section's defaults: ten rounds, four votes of five,
// BRS trust under S+P, series of ten games.
func DefaultConfig() *Config {
	return &Config{MaxRounds: 10, VotesNeeded: 4, Trust: trust.DefaultSettings(), SeriesLength: 10, InvalidPenalty: 10, Reward: RewardOwn}
}

// scriptableRoles are the roles the game can play itself.
var scriptableRoles = []string{"hb1", "hb2", "g1", "g2", "g3", "adversary"}

// Validate checks the section; errors name keys relative to it.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxRounds < 1 || c.MaxRounds > 100 {
		errs = append(errs, fmt.Errorf("key max_rounds: must be in [1, 100], got %d", c.MaxRounds))
	}
	if c.VotesNeeded < 1 || c.VotesNeeded > 5 {
		errs = append(errs, fmt.Errorf("key votes_needed: must be in [1, 5], got %d", c.VotesNeeded))
	}
	if err := c.Trust.Validate(); err != nil {
		for _, part := range strings.Split(err.Error(), "; ") {
			errs = append(errs, errors.New(strings.Replace(part, "key ", "key trust.", 1)))
		}
	}
	if _, err := c.Plan(); err != nil {
		errs = append(errs, fmt.Errorf("key conditions: %w", err))
	}
	if c.SeriesLength < 1 || c.SeriesLength > 10000 {
		errs = append(errs, fmt.Errorf("key series_length: must be in [1, 10000], got %d", c.SeriesLength))
	}
	for _, r := range c.Scripted {
		if !slices.Contains(scriptableRoles, r) {
			errs = append(errs, fmt.Errorf("key scripted: role %q is not one of %s", r, strings.Join(scriptableRoles, ", ")))
		}
	}
	if c.InvalidPenalty < 0 {
		errs = append(errs, fmt.Errorf("key invalid_penalty: must be zero or more, got %g", c.InvalidPenalty))
	}
	if c.Reward != RewardOwn && c.Reward != RewardHonestMean {
		errs = append(errs, fmt.Errorf("key reward: must be %s or %s, got %q", RewardOwn, RewardHonestMean, c.Reward))
	}
	if c.AssessTokens < 0 {
		errs = append(errs, fmt.Errorf("key assess_tokens: must be zero or more, got %d", c.AssessTokens))
	}
	return errors.Join(errs...)
}

// Plan returns the trust settings of each condition a series plan lays
// out: Conditions parsed, or the one of Trust. It checks what each entry
// sets (its method and condition); the rest is Trust's, which Validate
// checks under key trust, once.
func (c *Config) Plan() ([]trust.Settings, error) {
	if len(c.Conditions) == 0 {
		return []trust.Settings{c.Trust}, nil
	}
	var out []trust.Settings
	seen := map[trust.Settings]bool{}
	for _, entry := range c.Conditions {
		s := c.Trust
		method, cond, ok := strings.Cut(entry, "/")
		if ok {
			s.Method, s.Condition = method, cond
		} else {
			s.Condition = entry
		}
		if ok && !slices.Contains(trust.Methods, s.Method) {
			return nil, fmt.Errorf("%q: method %q is not one of %s", entry, s.Method, strings.Join(trust.Methods, ", "))
		}
		if !slices.Contains(trust.Conditions, s.Condition) {
			return nil, fmt.Errorf("%q: condition %q is not one of %s", entry, s.Condition, strings.Join(trust.Conditions, ", "))
		}
		if !s.Updates() {
			s.Method = trust.MethodBRS // nothing is assessed: one label per control
		}
		if seen[s] {
			return nil, fmt.Errorf("%q is listed twice", entry)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}
