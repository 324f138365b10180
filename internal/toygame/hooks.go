package toygame

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// What the toy game adds to evaluation, tournaments and the report, all
// through its rollout.Spec: a new game needs nothing outside its package.

// EvalSet is the game's held-out set for `parley eval pairwise --set toy`:
// its own bundled curriculum (EvalCurriculum), as a game's eval set may be.
var EvalSet = &rollout.EvalSet{Name: "toy", Label: "toy questions", Curriculum: EvalCurriculum,
	Aspects: []string{reward.AspectCollectiveAgency}}

// EvalCurriculum is the path of the game's bundled held-out set
// (curricula/toy-eval.jsonl, embedded): three rows of the eval split and
// one of the training split.
const EvalCurriculum = dataset.BuiltinPrefix + evalName

// evalName is the bundled set's name after dataset.BuiltinPrefix.
const evalName = "toy-eval"

//go:embed curricula/toy-eval.jsonl
var evalJSONL []byte

// Tournament makes the game (with rival: true) a round robin: each agent
// as player and as rival; the report is the player's mean share of the
// points per pairing.
var Tournament = &rollout.Tournament{
	Seats:  [2]string{RolePlayer, RoleRival},
	Report: tournamentReport,
}

// ScorerName is the scorer's name in rollout records.
const ScorerName = "toy-points"

// Scorer scores a game by its points: with a rival, the player's share of
// them (the rival earns the rest); alone, the total.
type Scorer struct{}

var _ reward.Judge = Scorer{}

// Name implements reward.Judge.
func (Scorer) Name() string { return ScorerName }

// Judge implements reward.Judge.
func (Scorer) Judge(_ context.Context, r *dataset.Rollout) (reward.Result, error) {
	st, err := outcome(r)
	if err != nil {
		return reward.Result{}, err
	}
	if st.Points == nil {
		return reward.Result{Score: float64(st.Total), Rationale: fmt.Sprintf("total %d", st.Total), Model: ScorerName}, nil
	}
	share := playerShare(st)
	return reward.Result{Score: share, Roles: map[string]float64{RolePlayer: share, RoleRival: 1 - share},
		Rationale: fmt.Sprintf("player %d of %d points", st.Points[RolePlayer], st.Total), Model: ScorerName}, nil
}

func outcome(r *dataset.Rollout) (State, error) {
	var st State
	if err := json.Unmarshal([]byte(r.Outcome), &st); err != nil {
		return st, fmt.Errorf("toygame: outcome of %s: %w", r.RolloutID, err)
	}
	return st, nil
}

func playerShare(st State) float64 {
	if st.Total == 0 {
		return 0.5
	}
	return float64(st.Points[RolePlayer]) / float64(st.Total)
}

// Report is the game's section of `parley report`: games and the mean
// total per step.
func Report(in rollout.ReportInput) (string, error) {
	if in.Rollouts == nil {
		return "", nil
	}
	type agg struct{ n, total float64 }
	steps := map[int32]*agg{}
	if err := in.Rollouts(func(r dataset.Rollout) error {
		st, err := outcome(&r)
		if err != nil || r.Failed {
			return nil
		}
		a := steps[r.Step]
		if a == nil {
			a = &agg{}
			steps[r.Step] = a
		}
		a.n++
		a.total += float64(st.Total)
		return nil
	}); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("## The toy game\n\n| step | games | mean total |\n|---|---|---|\n")
	keys := make([]int, 0, len(steps))
	for k := range steps {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		a := steps[int32(k)]
		fmt.Fprintf(&b, "| %d | %.0f | %.2f |\n", k, a.n, a.total/a.n)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// tournamentReport is the player's mean share of the points per pairing.
func tournamentReport(in rollout.TournamentReport) (string, any, error) {
	type cell struct {
		Player, Rival string
		Games         int
		Share         float64
	}
	cells := map[[2]string]*cell{}
	failed := 0
	for _, g := range in.Games {
		if g.Failed {
			failed++
			continue
		}
		st, err := outcome(g.Rollout)
		if err != nil {
			return "", nil, err
		}
		c := cells[g.Seats]
		if c == nil {
			c = &cell{Player: g.Seats[0], Rival: g.Seats[1]}
			cells[g.Seats] = c
		}
		c.Games++
		c.Share += playerShare(st)
	}
	out := make([]cell, 0, len(cells))
	for _, c := range cells {
		c.Share /= float64(c.Games)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Player < out[j].Player || out[i].Player == out[j].Player && out[i].Rival < out[j].Rival
	})
	var b strings.Builder
	fmt.Fprintf(&b, "# Toy tournament: %s\n\n%d agents, %d games scheduled, %d recorded, %d failed.\n\n", in.Name, len(in.Agents), in.Scheduled, len(in.Games), failed)
	b.WriteString("| player | rival | games | player's share |\n|---|---|---|---|\n")
	for _, c := range out {
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f |\n", c.Player, c.Rival, c.Games, c.Share)
	}
	return b.String(), out, nil
}
