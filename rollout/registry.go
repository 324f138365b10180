package rollout

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
)

// Spec is a game as the rest of parley sees it: everything a game is lives
// in its own package, which describes itself with a Definition and
// registers it from its init function (Register). Config validation, the
// command line, evaluation and the report find games through the registry
// (Lookup, Games), never by switching on names.
//
// A Spec holds four groups: the hooks that read the game's config section
// (Config, New, Scorer, Series: Register builds them from the
// Definition's typed ones, so that the section is asserted in one place),
// what its curriculum rows need (Curriculum), the facts callers check
// about its play (Traits) and the optional parts of parley it adds to
// (Hooks). Traits and Hooks are embedded: spec.ZeroSum, spec.Tournament.
// The rules that follow from a Spec are its methods (LoadOptions).
//
// A new game implements:
//   - a config section type C: a struct with yaml tags and defaults, whose
//     keys are game.<name>.<key> (Definition.Config); a Validate() error
//     method on *C is called by config validation, with errors naming
//     keys relative to the section;
//   - the Game interface (and SeriesGame if state carries from one game of
//     a series to the next), built from the section by Definition.New;
//   - what its curriculum rows need, and its bundled curricula
//     (Curriculum);
//   - optionally a scorer, its step metrics, report section, evaluation
//     set, tournament and serve-sim answers (Definition.Scorer, Hooks).
//
// package gametest checks a registered game against this contract.
type Spec struct {
	// Name is the game's env name: game.env, the rollouts' env column.
	Name string
	// Config returns a new section holding the game's defaults (a *C of
	// the game's Definition). Nil means the game has no settings.
	Config func() any
	// New builds the game from its section (the value Config returned,
	// decoded and overridden; nil means the defaults) and the settings
	// every game shares.
	New func(section any, shared Shared) (Game, error)
	// Scorer, if set, builds the game's own programmatic scorer from its
	// section, used when judge.kind is "game": per-role rewards computed
	// from the game's outcome (seed 001's ledger share, seed 002's utility
	// above BATNA) through reward.Result.Roles.
	Scorer func(section any) (reward.Judge, error)
	// Series, if set, lays out series of the game (a SeriesGame): n series
	// per condition the section configures, drawn from prompts and seeded,
	// each with its state before the first game (Series.Init). `parley
	// series` plays such a plan; series training (train.SeriesOptions)
	// takes one series per slot from a plan per generation.
	Series func(section any, prompts []dataset.Prompt, n int, seed int64) ([]Series, error)
	// Curriculum says what the game's prompt rows need.
	Curriculum Curriculum
	Traits
	Hooks
}

// Traits are the facts about a game's play that config validation,
// training and evaluation check: which sequences it records, which roles
// a player plays, how its scores compare.
type Traits struct {
	// Kinds are the kinds of training sequences the game records
	// (dataset.KindDialogue, dataset.KindFinal): a mask mode that trains
	// none of them is refused.
	Kinds []string
	// Players are the roles a player plays when they do not depend on the
	// row (nil when they come from the scenario): config validation checks
	// roles.<role> against them.
	Players []string
	// ScoreScale names the Scorer's scores and their range ("ledger share
	// 0–1"), for the labels of exports, reports and charts; zero means
	// "<game> score" with no range.
	ScoreScale dataset.ScoreScale
	// ZeroSum is set by two-sided games where one side's gain is the
	// other's loss (seed 001's share): a league rates a game by comparing
	// the sides' scores (win, draw, loss); in any other game by the trained
	// roles' score scaled to [0, 1].
	ZeroSum bool
	// UsesJudge is set by games that consult the judge (judge.base_url,
	// judge.model) during play: they get its client in Shared.Judge.
	UsesJudge bool
	// Negotiates is set by games whose rollouts negotiate to an agreement
	// (the deliberation game): their Rounds count rounds of negotiation and
	// Agreed tells whether one was reached, so evaluations report rounds
	// to agreement for them.
	Negotiates bool
}

// Hooks are the optional parts of parley a game adds to, none of which
// reads its section: each is nil when the game does without it.
type Hooks struct {
	// Metrics, if set, returns the game's own step metrics from a step's
	// rollouts (failed ones included): agreement rate, share transferred, …
	// They join the rollout summary and metrics.jsonl.
	Metrics func(rs []dataset.Rollout) map[string]float64
	// Report, if set, writes the game's section of `parley report` for a
	// run's rollouts: markdown, and PNG figures into the report's folder.
	Report func(in ReportInput) (markdown string, err error)
	// EvalSet, if set, is the game's held-out evaluation set: `parley eval
	// pairwise --set <EvalSet.Name>` plays the game on it by default.
	EvalSet *EvalSet
	// Tournament, if set, makes the game playable as a round robin among
	// agents (`parley tournament`, see Tournament).
	Tournament *Tournament
	// Sim, if set, returns the game's answers in serve-sim (package sim):
	// the replies of its scripted agents and the verdicts of its judge,
	// for games whose prompts the simulator's persona agents and built-in
	// judge cannot answer (seed 001's holders, requesters and ledger
	// judge; seed 002's parties). options are the game's serve-sim
	// settings (serve-sim --game-option <game>.<key>=<value>, nil for
	// none); an unknown key or a bad value is an error.
	Sim func(options map[string]string) (SimAnswerer, error)
}

// SimAnswerer is a game's side of serve-sim: the methods of the interface
// sim.Answerer, which package sim declares where it uses them (see there
// for their contract). The methods take standard types only, so a game
// implements them without importing sim and sim imports no game; the
// composition root (cmd/parley serve-sim) hands every registered game's
// to sim.New.
type SimAnswerer interface {
	// Reply is the game's agent's reply to a prompt (its chat messages'
	// roles and contents, in order) as the model named model; ok is false
	// when the prompt is not the game's, and then nothing is drawn from
	// rng.
	Reply(model string, roles, contents []string, rng *rand.Rand) (text string, ok bool)
	// Judge is the game's judge's answer to question, asked with the
	// response_format schema named schema ("" for none); ok is false when
	// the question is not the game's. outOfRange asks for an answer with a
	// value outside the schema.
	Judge(schema, question string, outOfRange bool) (content string, ok bool)
}

// Curriculum describes the prompt rows a game plays.
type Curriculum struct {
	// Default is the curriculum path used when curriculum.path is not
	// configured: usually one of the game's Builtins (builtin:dilemmas,
	// builtin:open-ended, builtin:endowment).
	Default string
	// RequirePersonas is set when every row needs personas for roles A
	// and B (the deliberation game).
	RequirePersonas bool
	// RequireScenario is set when every row needs the game's scenario
	// (Prompt.Scenario): a row without one is an error naming the file
	// and line when the curriculum is loaded.
	RequireScenario bool
	// Categories are the row categories the game adds to dataset.Categories
	// (seed 001's endowment, seed 002's scenario types); curriculum
	// loading and curriculum.mix accept them.
	Categories []string
	// Builtins are the game's bundled curricula (embedded in its package),
	// by name: builtin:<name> loads one, whichever game is configured
	// (Builtins, Spec.LoadOptions). Names are unique across games.
	Builtins map[string][]byte
	// Check, when set, validates one row for the game (its scenario
	// parses and can be played) as the curriculum is loaded, so that a bad
	// row is an error naming the file, the line and curriculum.path.
	Check func(dataset.Prompt) error
}

// LoadOptions are the options to load a curriculum of the game with
// (dataset.LoadPrompts): what its rows need, its categories, and every
// registered game's bundled curricula, so that any builtin:<name>
// resolves.
func (s Spec) LoadOptions() dataset.LoadOptions {
	return dataset.LoadOptions{
		RequirePersonas: s.Curriculum.RequirePersonas,
		RequireScenario: s.Curriculum.RequireScenario,
		Categories:      s.Curriculum.Categories,
		Builtins:        Builtins(),
		Check:           s.Curriculum.Check,
	}
}

// Builtins returns every registered game's bundled curricula by name
// (Curriculum.Builtins), for dataset.LoadOptions.Builtins.
func Builtins() map[string][]byte {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := map[string][]byte{}
	for _, s := range registry {
		maps.Copy(out, s.Curriculum.Builtins)
	}
	return out
}

// EvalSet is a game's held-out evaluation set for pairwise win rates
// (seed 000's tables 2–3).
type EvalSet struct {
	// Name is the set's name on the command line (--set conflict).
	Name string
	// Label names the set in results ("conflict resolution questions").
	Label string
	// Curriculum is the set's prompts when neither --data nor a config
	// playing this game names them (builtin:dilemmas).
	Curriculum string
	// Aspects are the aspects judged by default (reward.Aspect*).
	Aspects []string
}

// Shared are the settings every game is built with, from the config's
// sampling and judge sections.
type Shared struct {
	// TurnTokens bounds a dialogue turn; FinalTokens the final completion
	// (or a single answer).
	TurnTokens, FinalTokens int
	// Judge is the judge's chat client (judge.base_url, judge.model), for
	// games that consult an LLM judge during play (seed 001's ledger
	// judge); nil when none is configured.
	Judge Chatter
}

// ReportInput is what a game's report section is drawn from.
type ReportInput struct {
	// RunDir is the directory reported on (a run, or a game's own output
	// such as a tournament).
	RunDir string
	// Rollouts streams the run's rollouts, every step in order (nil when
	// the directory holds none); fn may keep what it is given.
	Rollouts func(fn func(dataset.Rollout) error) error
	// Dir is the report's folder: PNG figures go there, and the markdown
	// refers to them by base name.
	Dir string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Spec{}
)

// register adds a game to the registry (Register). It panics on an empty
// or duplicate name, a missing New, or a bundled curriculum name another
// game already uses: a registration is a program's wiring, checked at
// start.
func register(s Spec) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if s.Name == "" || s.New == nil {
		panic("rollout.Register: a game needs a name and New")
	}
	if _, dup := registry[s.Name]; dup {
		panic(fmt.Sprintf("rollout.Register: game %q registered twice", s.Name))
	}
	for name := range s.Curriculum.Builtins {
		for _, o := range registry {
			if _, dup := o.Curriculum.Builtins[name]; dup {
				panic(fmt.Sprintf("rollout.Register: game %q: curriculum %s%s is game %q's", s.Name, dataset.BuiltinPrefix, name, o.Name))
			}
		}
	}
	registry[s.Name] = s
}

// Lookup returns the registered game name.
func Lookup(name string) (Spec, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// Games returns every registered game, sorted by name.
func Games() []Spec {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// GameNames returns the registered game names, sorted.
func GameNames() []string {
	var names []string
	for _, s := range Games() {
		names = append(names, s.Name)
	}
	return names
}

// EvalSetGame returns the game whose evaluation set is named set
// (Spec.EvalSet.Name).
func EvalSetGame(set string) (Spec, bool) {
	for _, s := range Games() {
		if s.EvalSet != nil && s.EvalSet.Name == set {
			return s, true
		}
	}
	return Spec{}, false
}

// EvalSetNames returns the registered games' evaluation set names, sorted.
func EvalSetNames() []string {
	var names []string
	for _, s := range Games() {
		if s.EvalSet != nil {
			names = append(names, s.EvalSet.Name)
		}
	}
	sort.Strings(names)
	return names
}

// NewGame builds the registered game name from its section (nil: the
// game's defaults) and the shared settings (Spec.NewGame).
func NewGame(name string, section any, shared Shared) (Game, error) {
	s, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("rollout.NewGame: unknown game %q (registered: %v)", name, GameNames())
	}
	return s.NewGame(section, shared)
}

// NewGame builds the game from its section (nil: its defaults) and the
// shared settings.
func (s Spec) NewGame(section any, shared Shared) (Game, error) {
	if section == nil && s.Config != nil {
		section = s.Config()
	}
	g, err := s.New(section, shared)
	if err != nil {
		return nil, fmt.Errorf("rollout.NewGame %s: %w", s.Name, err)
	}
	return g, nil
}
