package gametest

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// checkScore judges the group: with the game's scorer, or serve-sim's
// Collective Agency judge for a game without one.
func (s *suite) checkScore(t *testing.T) error {
	var j reward.Judge = reward.NewCAJudge(s.env.judge)
	if s.spec.Scorer != nil {
		var err error
		if j, err = s.spec.Scorer(s.section); err != nil {
			return fmt.Errorf("the game's scorer: %w", err)
		}
	}
	st := reward.ScoreAll(t.Context(), j, s.played, GroupSize)
	if st.Judged != len(s.played) {
		return fmt.Errorf("judge %s scored %d of %d rollouts (%d failed)", j.Name(), st.Judged, len(s.played), st.Failed)
	}
	for _, r := range s.played {
		if !r.Judged || !finite(float64(r.Score)) {
			return fmt.Errorf("rollout %s: judged %v score %v (%s)", r.RolloutID, r.Judged, r.Score, r.JudgeError)
		}
	}
	return nil
}

// checkBatch computes the group's advantages and assembles its training
// rows under a mask mode that trains the game's first kind.
func (s *suite) checkBatch(t *testing.T) error {
	kept, _, err := grpo.ComputeAdvantages(slices.Clone(s.played), grpo.AdvantageOptions{Mode: grpo.ModeGroup, KeepZeroVariance: true}, nil)
	if err != nil {
		return err
	}
	if len(kept) == 0 {
		return fmt.Errorf("no rollout of the group was kept: no role was trained and scored")
	}
	mask := grpo.MaskDialogue
	if !mask.Trains(s.spec.Kinds[0]) {
		mask = grpo.MaskFinal
	}
	rows, st, err := grpo.BuildBatch(kept, grpo.BatchOptions{Step: 1, Mask: string(mask)})
	if err != nil {
		return err
	}
	if len(rows) == 0 || st.TrainedTokens == 0 {
		return fmt.Errorf("mask %s: %d rows, %d trained tokens from %d rollouts: nothing to train", mask, len(rows), st.TrainedTokens, len(kept))
	}
	return nil
}

// checkMetrics checks the game's step metrics of the group are finite.
func (s *suite) checkMetrics(t *testing.T) error {
	for k, v := range s.spec.Metrics(s.played) {
		if k == "" || !finite(v) {
			return fmt.Errorf("step metric %q = %v", k, v)
		}
	}
	return nil
}

// checkReport writes the game's report section of a run directory
// holding the group, and of one holding no rollouts.
func (s *suite) checkReport(t *testing.T) error {
	stream := func(fn func(dataset.Rollout) error) error {
		for _, r := range s.played {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := s.spec.Report(rollout.ReportInput{RunDir: t.TempDir(), Rollouts: stream, Dir: t.TempDir()}); err != nil {
		return fmt.Errorf("the report of the group: %w", err)
	}
	if _, err := s.spec.Report(rollout.ReportInput{RunDir: t.TempDir(), Dir: t.TempDir()}); err != nil {
		return fmt.Errorf("the report of a directory without rollouts: %w", err)
	}
	return nil
}

// checkTournament checks the game's seats and conditions against its
// rows, freezes its files, and writes its tournament report over the
// group played as a tournament's games: two agents, each in each seat.
func (s *suite) checkTournament(t *testing.T) error {
	tr := s.spec.Tournament
	// The seats are roles of the game as a tournament file configures it
	// (the toy game's rival: true), not necessarily under its defaults;
	// where the game names its players, they are two of them.
	if tr.Seats[0] == "" || tr.Seats[0] == tr.Seats[1] {
		return fmt.Errorf("seats %v: want two roles", tr.Seats)
	}
	if p := s.spec.Players; p != nil && (!slices.Contains(p, tr.Seats[0]) || !slices.Contains(p, tr.Seats[1])) {
		return fmt.Errorf("seats %v: want two of the game's players %v", tr.Seats, p)
	}
	if (tr.Condition == nil) != (len(tr.Conditions) == 0) {
		return fmt.Errorf("conditions %v with Condition set %v: a game has both or neither", tr.Conditions, tr.Condition != nil)
	}
	conditions := make([]string, len(s.rows))
	for i, p := range s.rows {
		if tr.Condition == nil {
			continue
		}
		c, err := tr.Condition(p)
		if err != nil || !slices.Contains(tr.Conditions, c) {
			return fmt.Errorf("row %s: condition %q, %v: want one of %v", p.ID, c, err, tr.Conditions)
		}
		conditions[i] = c
	}
	var hash string
	if tr.Files != nil {
		files, where, err := tr.Files(s.section)
		if err != nil || len(files) == 0 || where == "" {
			return fmt.Errorf("files: %d from %q, %v", len(files), where, err)
		}
		for i, f := range files {
			if f.Name == "" || slices.ContainsFunc(files[:i], func(o rollout.File) bool { return o.Name == f.Name }) {
				return fmt.Errorf("files: name %q is empty or repeated", f.Name)
			}
		}
		hash = filesSHA256(files)
	}
	in := rollout.TournamentReport{Name: "gametest", Dir: t.TempDir(), Section: s.section, Seed: 1, Rounds: 1, Schedule: "gametest",
		Agents: []rollout.TournamentAgent{{Name: "agent-a"}, {Name: "agent-b"}}, Scheduled: len(s.played), FilesSHA256: hash}
	if tr.Analysis != nil {
		if in.Analysis = tr.Analysis(); in.Analysis == nil {
			return fmt.Errorf("tournament.Analysis() returned nil")
		}
	}
	if tr.Condition != nil {
		in.Conditions = []string{conditions[0]}
	}
	for i := range s.played {
		seats := [2]string{"agent-a", "agent-b"}
		if i%2 == 1 {
			seats[0], seats[1] = seats[1], seats[0]
		}
		in.Games = append(in.Games, rollout.TournamentGame{ID: fmt.Sprintf("g%03d", i), Condition: conditions[0], Round: 1 + i/2,
			Seats: seats, Rollout: &s.played[i]})
	}
	md, _, err := tr.Report(in)
	if err != nil {
		return fmt.Errorf("the tournament report: %w", err)
	}
	if strings.TrimSpace(md) == "" {
		return fmt.Errorf("the tournament report is empty")
	}
	return nil
}

// filesSHA256 is the hash of a game's frozen files, as a tournament
// records it (rollout.TournamentReport.FilesSHA256): the SHA-256 of one
// "name sha256" line per file.
func filesSHA256(files []rollout.File) string {
	var lines strings.Builder
	for _, f := range files {
		fmt.Fprintf(&lines, "%s %x\n", f.Name, sha256.Sum256(f.Data))
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(lines.String())))
}

// checkSeries lays out a series plan of the rows for a SeriesGame and
// plays the first two games of its first series against serve-sim, the
// state of the first carried into the second.
func (s *suite) checkSeries(t *testing.T) error {
	if _, ok := s.game.(rollout.SeriesGame); !ok {
		return fmt.Errorf("the game lays out series but is no rollout.SeriesGame")
	}
	plan, err := s.spec.Series(s.section, s.rows, 1, 1)
	if err != nil {
		return fmt.Errorf("a series plan: %w", err)
	}
	if len(plan) == 0 || len(plan[0].Games) == 0 {
		return fmt.Errorf("a series plan of one series per condition is empty")
	}
	first := plan[0]
	first.Games = first.Games[:min(2, len(first.Games))]
	dir := t.TempDir()
	sum, err := rollout.RunSeries(t.Context(), s.runnerOptions(), dir, []rollout.Series{first})
	if err != nil {
		return fmt.Errorf("playing series %s: %w", first.ID, err)
	}
	if sum.Failed > 0 || sum.Played != len(first.Games) {
		return fmt.Errorf("series %s: %d of %d games played, %d failed: %v", first.ID, sum.Played, len(first.Games), sum.Failed, sum.FirstErr)
	}
	recs, err := rollout.ReadSeries(dir, first.ID)
	if err != nil || len(recs) != len(first.Games) {
		return fmt.Errorf("series %s: %d games recorded, %v", first.ID, len(recs), err)
	}
	for _, r := range recs {
		if len(r.State) == 0 || r.Rollout.Failed {
			return fmt.Errorf("series %s game %d: state %q, failed %v (%s)", first.ID, r.Index, r.State, r.Rollout.Failed, r.Rollout.Error)
		}
	}
	return nil
}

// checkEvalSet loads the game's evaluation set as the game's rows, as
// `parley eval pairwise` loads it, and finds the set by its name.
func (s *suite) checkEvalSet(t *testing.T) error {
	es := s.spec.EvalSet
	if es.Name == "" || es.Label == "" || es.Curriculum == "" || len(es.Aspects) == 0 {
		return fmt.Errorf("eval set %+v: want a name, a label, a curriculum and aspects", *es)
	}
	if g, ok := rollout.EvalSetGame(es.Name); ok && g.Name != s.spec.Name {
		return fmt.Errorf("eval set %s is game %s's too", es.Name, g.Name)
	}
	rows, err := dataset.LoadPrompts(es.Curriculum, s.spec.LoadOptions())
	if err != nil {
		return fmt.Errorf("eval set %s: %w", es.Name, err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("eval set %s: %s has no rows", es.Name, es.Curriculum)
	}
	return s.playable(rows, es.Curriculum)
}

// notAGame is a prompt no game's serve-sim answers may claim.
var notAGame = []string{"system", "You are gametest's probe, no game's agent.", "user", "Say anything."}

// checkSim checks the game's serve-sim answers: an unknown option is
// refused, and a prompt or question that is not the game's is declined
// without drawing from the RNG.
func (s *suite) checkSim(t *testing.T) error {
	if _, err := s.spec.Sim(map[string]string{"gametest-no-such-option": "1"}); err == nil {
		return fmt.Errorf("spec.Sim accepted the unknown option gametest-no-such-option")
	}
	a, err := s.spec.Sim(nil)
	if err != nil {
		return err
	}
	roles, contents := []string{notAGame[0], notAGame[2]}, []string{notAGame[1], notAGame[3]}
	rng, fresh := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	if text, ok := a.Reply("gametest", roles, contents, rng); ok {
		return fmt.Errorf("its serve-sim answers answered a prompt that is not the game's: %q", text)
	}
	if rng.Uint64() != fresh.Uint64() {
		return fmt.Errorf("its serve-sim answers declined a prompt but drew from the RNG")
	}
	if content, ok := a.Judge("", "gametest: is this question any game's?", false); ok {
		return fmt.Errorf("its serve-sim answers judged a question that is not the game's: %q", content)
	}
	return nil
}
