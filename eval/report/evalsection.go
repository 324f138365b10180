package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/metrics"
)

// EvalSetup is how an evaluation during training was made, the head of
// each RUN/evals/step-N.json the training loop writes (harness.EvalResult
// embeds it): the step, the base model, the held-out set and its size, the
// decoding, how the finals were compared and by which judge.
type EvalSetup struct {
	Step       int    `json:"step"`
	Base       string `json:"base"`
	Set        string `json:"set"`
	Prompts    int    `json:"prompts"`
	Decoding   string `json:"decoding"`
	Comparison string `json:"comparison"`
	Judge      string `json:"judge"`
}

// firstEvalFile reads the run's first evals/step-N.json; ok is false when
// there is none or it cannot be read.
func firstEvalFile(runDir string) (EvalSetup, bool) {
	var e EvalSetup
	paths, err := filepath.Glob(filepath.Join(dataset.RunDir(runDir).EvalsDir(), "step-*.json"))
	if err != nil || len(paths) == 0 {
		return e, false
	}
	sort.Strings(paths)
	b, err := os.ReadFile(paths[0])
	if err != nil || json.Unmarshal(b, &e) != nil {
		return e, false
	}
	return e, true
}

// evalSection writes the evaluations during training (train.eval_every):
// how they were made, a table per evaluated step and the curves. A run
// without evaluation lines has no section.
func (g *generator) evalSection(m *Metrics) error {
	steps, _ := m.Series(metrics.KeyEvalWinRate)
	if len(steps) == 0 {
		if m.Has(metrics.KeyEvalScoreMean) || m.Has(metrics.KeyEvalAgreementRate) {
			g.note("metrics.jsonl has evaluation keys but no `%s`: no evaluation section", metrics.KeyEvalWinRate)
		}
		return nil
	}
	g.printf("### Held-out evaluation during training\n\n")
	g.printf("%s\n\n", g.evalIntro())
	g.evalTable(m)
	for _, c := range evalPanels(g.scoreLabel(), scoreLimits(g.scale)) {
		if err := g.chart(m, c, 1); err != nil {
			return err
		}
	}
	return nil
}

// evalIntro says how the evaluations were made, from the run's first
// evaluation file when there is one.
func (g *generator) evalIntro() string {
	e, ok := firstEvalFile(g.opts.RunDir)
	if !ok {
		return "Every `train.eval_every` steps the step's adapter played the held-out prompts against the base model. " +
			"Win rate in percent of verdicts, a tie counting half."
	}
	return fmt.Sprintf("Every `train.eval_every` steps the step's adapter played the %d prompts of the %s against the base model (`%s`), "+
		"%s decoding, beside training. The two final completions of each prompt were compared by %s (judge `%s`): "+
		"win rate in percent of verdicts, two per prompt, a tie counting half. Scores (%s) are the run's judge's mean over each side's rollouts. "+
		"Points are as recorded, not averaged.", e.Prompts, e.Set, e.Base, e.Decoding, e.Comparison, e.Judge, g.scoreLabel())
}

// evalTable has a row per evaluated step: the win rate and its verdicts,
// and each side's score, agreement rate and rounds to agreement.
func (g *generator) evalTable(m *Metrics) {
	val := func(row map[metrics.Key]float64, key metrics.Key) string {
		v, ok := row[key]
		if !ok || math.IsNaN(v) { // NaN: undefined, rounds to agreement without agreement
			return "–"
		}
		return f2(v)
	}
	pair := func(row map[metrics.Key]float64, key metrics.Key) string {
		return val(row, metrics.EvalPrefix+key) + " / " + val(row, metrics.EvalPrefix+metrics.KeyBasePrefix+key)
	}
	var rows [][]string
	for i, s := range m.Steps {
		r := m.Rows[i]
		wr, ok := r[metrics.KeyEvalWinRate]
		if !ok {
			continue
		}
		cell := fmt.Sprintf("%.1f", wr)
		if wr > 50 {
			cell = "**" + cell + "**"
		}
		verdicts := fmt.Sprintf("%g / %g / %g", r[metrics.KeyEvalWins], r[metrics.KeyEvalTies], r[metrics.KeyEvalLosses])
		rows = append(rows, []string{fmt.Sprint(s), cell, verdicts,
			pair(r, metrics.KeyScoreMean), pair(r, metrics.KeyAgreementRate), pair(r, metrics.KeyRoundsToAgreement)})
	}
	g.table([]string{"step", "win rate vs. base, %", "wins / ties / losses",
		"score (" + g.scoreLabel() + "), adapter / base", "agreement rate, adapter / base", "rounds to agreement, adapter / base"}, rows)
}

// trainerSection writes the trainer's optimisation metrics (loss, KL,
// entropy, gradient norm, clip fraction) when the run recorded them.
func (g *generator) trainerSection(m *Metrics, w int) error {
	panels := trainerPanels()
	var keys []metrics.Key
	for _, c := range panels {
		keys = append(keys, c.keys()...)
	}
	has := false
	for _, k := range keys {
		has = has || m.Has(k)
	}
	if !has {
		return nil
	}
	g.printf("### Trainer\n\n")
	g.printf("The trainer's metrics of each step (`trainer/…` in metrics.jsonl), %d-step running averages.\n\n", w)
	g.summaryTable(m, keys, w)
	g.emptyBatchNote(m)
	for _, c := range panels {
		if err := g.chart(m, c, w); err != nil {
			return err
		}
	}
	return nil
}

// emptyBatchNote says at which steps the trainer had nothing to train,
// where its charts have no points while the run's others go on.
func (g *generator) emptyBatchNote(m *Metrics) {
	var empty []int
	for i, r := range m.Rows {
		if r[metrics.KeyTrainerEmptyBatch] == 1 {
			empty = append(empty, m.Steps[i])
		}
	}
	if len(empty) == 0 {
		return
	}
	g.printf("The trainer's batch was empty at %s (`%s`: every group's rewards were equal, so every group was dropped for zero variance, `%s`): "+
		"no update was made, and the trainer reports no loss, KL, entropy, gradient norm or clip fraction for such a step, so its charts have no points there.\n\n",
		stepsLabel(empty), metrics.KeyTrainerEmptyBatch, metrics.KeyGroupsDroppedZeroVariance)
}

// stepSpans lists ascending steps with runs of consecutive steps as
// spans: "3, 15–24".
func stepSpans(steps []int) string {
	var parts []string
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && steps[j+1] == steps[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(steps[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d–%d", steps[i], steps[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// stepsLabel is "step 3" or "steps 3, 15–24".
func stepsLabel(steps []int) string {
	if len(steps) == 1 {
		return "step " + stepSpans(steps)
	}
	return "steps " + stepSpans(steps)
}
