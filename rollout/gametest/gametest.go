// Package gametest is the conformance suite of parley's games, as
// llm/contract is of its inference servers: what a game registers
// (rollout.Spec) must work with the rest of parley, whichever game it is.
// RunAll runs the suite over every game the test binary registered, so a
// new game is covered by the registration line that makes it known
// (rollout/games, or importing its package); Run checks one Spec.
//
// For each game the suite, in order:
//
//   - spec: the registration is whole (name, New, the kinds it records, a
//     default curriculum), its section's defaults are a fresh value that
//     passes its own Validate, and the game builds from them;
//   - curriculum: the default curriculum and each bundled one load through
//     Spec.LoadOptions, and every row is one the game plays, with its
//     players among the row's roles;
//   - play: a group of rollouts of the first row, played over HTTP against
//     serve-sim (package sim, in process, answering every registered
//     game's prompts through its Spec.Sim), fails none, and records only
//     the kinds of sequences the game declares;
//   - score: the game's scorer, or the Collective Agency judge of
//     serve-sim for a game without one, judges every rollout;
//   - batch: grpo's advantages and batch assembly turn the group into
//     training rows, under a mask mode that trains one of its kinds;
//   - metrics, report, tournament, series: the hooks a game sets run on
//     the group (its step metrics are finite, its report section is
//     written, its tournament seats are two of its players and its
//     conditions cover its rows, its files freeze, and its tournament
//     report is written over the group played as two agents' games; a
//     SeriesGame lays out a series plan and plays two games of it, the
//     state carried from one to the next);
//   - evalset: a held-out evaluation set loads as the game's rows
//     (Spec.LoadOptions, as `parley eval pairwise` loads it) and is found
//     by its name;
//   - sim: the game's serve-sim answers refuse an unknown option and
//     decline a prompt that is not the game's.
package gametest

import (
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
)

// GroupSize is the number of rollouts of the group the suite plays.
const GroupSize = 2

// Tokens bounds every sampled turn and judge reply of the suite.
const Tokens = 200

// RunAll runs the suite over every registered game, one subtest each,
// named for the game.
func RunAll(t *testing.T) {
	t.Helper()
	games := rollout.Games()
	if len(games) == 0 {
		t.Fatal("gametest.RunAll: no game is registered: import the games' packages")
	}
	for _, spec := range games {
		t.Run(spec.Name, func(t *testing.T) { Run(t, spec) })
	}
}

// Run runs the suite over the game spec, one subtest per check (see the
// package doc), against a serve-sim of its own. A check that the game's
// state for later ones depends on (its rows, its rollouts) stops the
// suite when it fails.
func Run(t *testing.T, spec rollout.Spec) {
	t.Helper()
	s := &suite{spec: spec, env: startSim(t, spec)}
	for _, c := range s.checks() {
		if !t.Run(c.name, func(t *testing.T) {
			if c.absent {
				t.Skipf("the game sets no %s", c.name)
			}
			if err := c.run(t); err != nil {
				t.Fatal(err)
			}
		}) && c.needed {
			return
		}
	}
}

// check is one check of the suite; a needed check's failure stops the
// ones after it, and an absent one (of a hook the game does without) is
// skipped.
type check struct {
	name           string
	needed, absent bool
	run            func(t *testing.T) error
}

// checks lists the suite's checks, in order.
func (s *suite) checks() []check {
	sp := s.spec
	return []check{
		{"spec", true, false, s.checkSpec},
		{"curriculum", true, false, s.checkCurriculum},
		{"play", true, false, s.checkPlay},
		{"score", true, false, s.checkScore},
		{"batch", false, false, s.checkBatch},
		{"metrics", false, sp.Metrics == nil, s.checkMetrics},
		{"report", false, sp.Report == nil, s.checkReport},
		{"tournament", false, sp.Tournament == nil, s.checkTournament},
		{"series", false, sp.Series == nil, s.checkSeries},
		{"evalset", false, sp.EvalSet == nil, s.checkEvalSet},
		{"sim", false, sp.Sim == nil, s.checkSim},
	}
}

// suite is the state the checks of one game share: what each built for
// the ones after it.
type suite struct {
	spec rollout.Spec
	env  *env

	section any // the section's defaults (nil: no settings)
	game    rollout.Game
	rows    []dataset.Prompt
	played  []dataset.Rollout // the group, scored once score passed
}

// env is a serve-sim in process and the clients of its policy and judge.
type env struct {
	policy *llm.Client
	judge  *chat.Client
}

// startSim starts serve-sim answering every registered game's prompts,
// spec's own answers standing in for its registered ones (spec may be a
// variant of a registered game), and connects to it.
func startSim(t *testing.T, spec rollout.Spec) *env {
	t.Helper()
	var games []sim.Answerer
	for _, g := range rollout.Games() {
		if g.Name == spec.Name {
			g = spec
		}
		if g.Sim == nil {
			continue
		}
		a, err := g.Sim(nil)
		if err != nil {
			t.Fatalf("gametest: game %s: its serve-sim answers without options: %v", g.Name, err)
		}
		games = append(games, a)
	}
	if _, registered := rollout.Lookup(spec.Name); !registered && spec.Sim != nil {
		a, err := spec.Sim(nil)
		if err != nil {
			t.Fatalf("gametest: game %s: its serve-sim answers without options: %v", spec.Name, err)
		}
		games = append(games, a)
	}
	srv, err := sim.New(sim.Options{Games: games})
	if err != nil {
		t.Fatalf("gametest: serve-sim: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	policy, err := llm.New(llm.Options{Endpoints: []string{ts.URL}})
	if err != nil {
		t.Fatalf("gametest: policy client: %v", err)
	}
	t.Cleanup(policy.Close)
	judge, err := chat.New(chat.Options{BaseURL: ts.URL + "/v1", Model: sim.DefaultJudgeModel,
		Retry: retry.Policy{MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond}})
	if err != nil {
		t.Fatalf("gametest: judge client: %v", err)
	}
	t.Cleanup(func() { _ = judge.Close() })
	return &env{policy: policy, judge: judge}
}

// shared are the settings every game is built with in the suite: the
// judge's client for a game that consults it.
func (s *suite) shared() rollout.Shared {
	sh := rollout.Shared{TurnTokens: Tokens, FinalTokens: Tokens}
	if s.spec.UsesJudge {
		sh.Judge = s.env.judge
	}
	return sh
}

// validator is a section with its own checks (rollout.Definition.Config).
type validator interface{ Validate() error }

// checkSpec checks the registration and builds the game from its
// defaults.
func (s *suite) checkSpec(t *testing.T) error {
	sp := s.spec
	if sp.Name == "" || sp.New == nil {
		return fmt.Errorf("the game has no name or no New")
	}
	if len(sp.Kinds) == 0 {
		return fmt.Errorf("spec.Kinds is empty: a game records dialogue or final sequences")
	}
	for _, k := range sp.Kinds {
		if k != dataset.KindDialogue && k != dataset.KindFinal {
			return fmt.Errorf("spec.Kinds %v: %q is no kind of sequence (want %s, %s)", sp.Kinds, k, dataset.KindDialogue, dataset.KindFinal)
		}
	}
	if sp.Curriculum.Default == "" {
		return fmt.Errorf("spec.Curriculum.Default is empty: the game has no curriculum to play")
	}
	if sp.Config != nil {
		a, b := sp.Config(), sp.Config()
		if a == nil {
			return fmt.Errorf("spec.Config() returned nil: a game without settings leaves Config nil")
		}
		if a == b {
			return fmt.Errorf("spec.Config() returned the same section twice: each config needs its own")
		}
		if v, ok := a.(validator); ok {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("the section's defaults fail its Validate: %w", err)
			}
		}
		s.section = a
	}
	g, err := sp.NewGame(s.section, s.shared())
	if err != nil {
		return fmt.Errorf("the game does not build from its defaults: %w", err)
	}
	if g.Name() != sp.Name {
		return fmt.Errorf("the game built is named %q, registered as %q", g.Name(), sp.Name)
	}
	s.game = g
	return nil
}

// checkCurriculum loads the default and bundled curricula as the game's
// rows and checks the game plays each row.
func (s *suite) checkCurriculum(t *testing.T) error {
	rows, err := dataset.LoadPrompts(s.spec.Curriculum.Default, s.spec.LoadOptions())
	if err != nil {
		return fmt.Errorf("the default curriculum %s: %w", s.spec.Curriculum.Default, err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("the default curriculum %s has no rows", s.spec.Curriculum.Default)
	}
	for name := range s.spec.Curriculum.Builtins {
		path := dataset.BuiltinPrefix + name
		bundled, err := dataset.LoadPrompts(path, s.spec.LoadOptions())
		if err != nil || len(bundled) == 0 {
			return fmt.Errorf("the bundled curriculum %s: %d rows, %v", path, len(bundled), err)
		}
	}
	if err := s.playable(rows, s.spec.Curriculum.Default); err != nil {
		return err
	}
	s.rows = rows
	return nil
}

// playable checks that the game plays every row of path: the row
// validates, has roles (each once), and the game's players among them.
func (s *suite) playable(rows []dataset.Prompt, path string) error {
	for _, p := range rows {
		if err := s.game.Validate(p); err != nil {
			return fmt.Errorf("%s: row %s: the game refuses it: %w", path, p.ID, err)
		}
		roles := s.game.Roles(p)
		if len(roles) == 0 {
			return fmt.Errorf("%s: row %s: the game has no roles for it", path, p.ID)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(roles)))) != len(roles) {
			return fmt.Errorf("%s: row %s: roles %v repeat one", path, p.ID, roles)
		}
		for _, pl := range s.spec.Players {
			if !slices.Contains(roles, pl) {
				return fmt.Errorf("%s: row %s: player %s is not among its roles %v", path, p.ID, pl, roles)
			}
		}
	}
	return nil
}

// runnerOptions play the game with the trained policy in every role on
// serve-sim, a group of GroupSize.
func (s *suite) runnerOptions() rollout.RunnerOptions {
	return rollout.RunnerOptions{Game: s.game, Policy: s.env.policy, Model: sim.DefaultModel,
		Sampling: llm.Sampling{MaxTokens: Tokens, Temperature: 1, TopP: 1, TopK: -1}, GroupSize: GroupSize, Concurrency: GroupSize,
		Seed: 7, RunID: "gametest", Step: 1}
}

// checkPlay plays a group of the first row against serve-sim.
func (s *suite) checkPlay(t *testing.T) error {
	r, err := rollout.NewRunner(s.runnerOptions())
	if err != nil {
		return err
	}
	row := s.rows[0]
	var out []dataset.Rollout
	if _, err := r.Run(t.Context(), []dataset.Prompt{row}, func(rec *dataset.Rollout) error {
		out = append(out, *rec)
		return nil
	}); err != nil {
		return fmt.Errorf("playing row %s: %w", row.ID, err)
	}
	if len(out) != GroupSize {
		return fmt.Errorf("row %s: %d rollouts, want %d", row.ID, len(out), GroupSize)
	}
	for _, rec := range out {
		if rec.Failed {
			return fmt.Errorf("rollout %s failed: %s", rec.RolloutID, rec.Error)
		}
		if rec.Env != s.spec.Name || rec.GroupID != out[0].GroupID {
			return fmt.Errorf("rollout %s: env %q group %q, want %q and one group", rec.RolloutID, rec.Env, rec.GroupID, s.spec.Name)
		}
		if len(rec.Turns) == 0 || len(rec.Sequences) == 0 {
			return fmt.Errorf("rollout %s: %d turns, %d sequences: nothing was played", rec.RolloutID, len(rec.Turns), len(rec.Sequences))
		}
		for _, seq := range rec.Sequences {
			if !slices.Contains(s.spec.Kinds, seq.Kind) {
				return fmt.Errorf("rollout %s: a %s sequence of role %s, but the game declares Kinds %v", rec.RolloutID, seq.Kind, seq.Role, s.spec.Kinds)
			}
		}
		for _, role := range s.game.Roles(row) {
			if rec.Role(role) == nil {
				return fmt.Errorf("rollout %s: no outcome for role %s", rec.RolloutID, role)
			}
		}
	}
	s.played = out
	return nil
}

// finite reports whether f is a number.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
