package endowment

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// ScorerName is the scorer's name in rollout records.
const ScorerName = "ledger-share"

// Scorer is the game's programmatic scorer (judge.kind: game): the share
// of the endowment transferred, the holder's reward 1 − share and the
// requester's share.
type Scorer struct{}

var _ reward.Judge = Scorer{}

// Name implements reward.Judge.
func (Scorer) Name() string { return ScorerName }

// Judge implements reward.Judge.
func (Scorer) Judge(_ context.Context, r *dataset.Rollout) (reward.Result, error) {
	o, err := RolloutOutcome(r)
	if err != nil {
		return reward.Result{}, err
	}
	why := fmt.Sprintf("%s of %s transferred (share %.4f), ended by %s after %d holder turns", money(o.Transferred), money(o.Endowment), o.Share, o.Ended, o.HolderTurns)
	if o.Unparsed > 0 {
		why += fmt.Sprintf("; %d unparsed verdicts counted as no transfer", o.Unparsed)
	}
	return reward.Result{
		Score:     o.Share,
		Roles:     map[string]float64{RoleHolder: 1 - o.Share, RoleRequester: o.Share},
		Rationale: why,
		Model:     ScorerName,
	}, nil
}

// Metric keys of a step (Metrics).
const (
	MetricShare        = "endowment_share_mean"
	MetricTurn1Refusal = "endowment_turn1_refusal_rate"
	MetricFinalRefusal = "endowment_final_refusal_rate"
	MetricExhausted    = "endowment_exhausted_rate"
	MetricHolderTurns  = "endowment_holder_turns_mean"
	MetricUnparsed     = "endowment_unparsed_verdicts"
	MetricConcession1  = "endowment_turn1_concession_mean"
)

// Metrics are the game's step metrics over the finished rollouts of a
// step (failed ones are left out).
func Metrics(rs []dataset.Rollout) map[string]float64 {
	var n, share, t1, fr, ex, turns, unparsed, c1 float64
	for i := range rs {
		o, err := RolloutOutcome(&rs[i])
		if err != nil {
			continue
		}
		n++
		share += o.Share
		if o.Turn1Refusal {
			t1++
		}
		switch o.Ended {
		case EndFinalRefusal:
			fr++
		case EndExhausted:
			ex++
		}
		turns += float64(o.HolderTurns)
		unparsed += float64(o.Unparsed)
		c1 += o.CumulativeAt(1)
	}
	if n == 0 {
		return nil
	}
	return map[string]float64{
		MetricShare: share / n, MetricTurn1Refusal: t1 / n, MetricFinalRefusal: fr / n, MetricExhausted: ex / n,
		MetricHolderTurns: turns / n, MetricUnparsed: unparsed, MetricConcession1: c1 / n,
	}
}

// Report is the game's section of `parley report` for a training run: the
// mean share transferred and the turn-1 refusal rate by step, and the
// share by the opponent each trained role faced.
func Report(in rollout.ReportInput) (string, error) {
	if in.Rollouts == nil {
		return "", nil
	}
	type stepAgg struct{ n, share, t1 float64 }
	steps := map[int32]*stepAgg{}
	type key struct{ role, opponent string }
	byOpp := map[key]*stepAgg{}
	failed := 0
	err := in.Rollouts(func(r dataset.Rollout) error {
		o, err := RolloutOutcome(&r)
		if err != nil {
			failed++
			return nil
		}
		a := steps[r.Step]
		if a == nil {
			a = &stepAgg{}
			steps[r.Step] = a
		}
		a.n++
		a.share += o.Share
		if o.Turn1Refusal {
			a.t1++
		}
		for _, ro := range r.Roles {
			if !ro.Trained {
				continue
			}
			opp := RoleHolder
			if ro.Role == RoleHolder {
				opp = RoleRequester
			}
			other := r.Role(opp)
			name := "?"
			if other != nil {
				name = string(other.Policy) + ":" + other.Model
			}
			k := key{ro.Role, name}
			b := byOpp[k]
			if b == nil {
				b = &stepAgg{}
				byOpp[k] = b
			}
			b.n++
			b.share += o.Share
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("endowment.Report: %w", err)
	}
	if len(steps) == 0 {
		return "## Endowment game\n\nNo finished endowment rollouts.\n", nil
	}
	var xs, share, t1 []float64
	var order []int32
	for s := range steps {
		order = append(order, s)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	for _, s := range order {
		a := steps[s]
		xs = append(xs, float64(s))
		share = append(share, a.share/a.n)
		t1 = append(t1, a.t1/a.n)
	}
	const file = "endowment_share_by_step.png"
	chart := figure.Chart{Title: "Endowment game: share transferred and turn-1 refusal by step", XLabel: "step", YLabel: "rate", YMin: 0, YMax: 1,
		Lines: []figure.Line{{Label: "mean share transferred", X: xs, Y: share, Color: figure.Palette(3)},
			{Label: "holder turn-1 refusal rate", X: xs, Y: t1, Style: figure.StyleDashed, Color: figure.Palette(0)}}}
	if err := chart.WritePNG(filepath.Join(in.Dir, file)); err != nil {
		return "", fmt.Errorf("endowment.Report: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Endowment game\n\n![share by step](%s)\n\n", file)
	fmt.Fprintf(&b, "| step | games | mean share | turn-1 refusal |\n|---|---|---|---|\n")
	for i, s := range order {
		fmt.Fprintf(&b, "| %d | %g | %.3f | %.3f |\n", s, steps[s].n, share[i], t1[i])
	}
	if len(byOpp) > 0 {
		b.WriteString("\n| trained role | opponent | games | mean share |\n|---|---|---|---|\n")
		var keys []key
		for k := range byOpp {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].role != keys[j].role {
				return keys[i].role < keys[j].role
			}
			return keys[i].opponent < keys[j].opponent
		})
		for _, k := range keys {
			a := byOpp[k]
			fmt.Fprintf(&b, "| %s | %s | %g | %.3f |\n", k.role, k.opponent, a.n, a.share/a.n)
		}
	}
	if failed > 0 {
		fmt.Fprintf(&b, "\n%d failed rollouts left out.\n", failed)
	}
	return b.String(), nil
}
