package train

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// GoldItem is one line of a gold set (config judge.gold.path): a final
// completion and the score the judge first gave it.
type GoldItem struct {
	ID       string            `json:"id"`
	Task     string            `json:"task"`
	Final    string            `json:"final"`
	Personas []dataset.Persona `json:"personas,omitempty"`
	Score    *float64          `json:"score"`
}

// ReadGold reads a gold set: JSONL, one GoldItem a line (blank lines
// skipped). A line that does not parse, lacks id, final or score, or
// repeats an id is an error naming the file and line.
func ReadGold(path string) ([]GoldItem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gold set: %w", err)
	}
	defer f.Close()
	var items []GoldItem
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var it GoldItem
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil {
			return nil, fmt.Errorf("%s:%d: gold item: %w", path, n, err)
		}
		switch {
		case it.ID == "":
			err = errors.New("no id")
		case it.Final == "":
			err = errors.New("no final")
		case it.Score == nil:
			err = errors.New("no score")
		case math.IsNaN(*it.Score) || math.IsInf(*it.Score, 0):
			err = fmt.Errorf("score %g is not a number", *it.Score)
		case seen[it.ID] > 0:
			err = fmt.Errorf("id %q repeats line %d", it.ID, seen[it.ID])
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: gold item: %w", path, n, err)
		}
		seen[it.ID] = n
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: the gold set has no items", path)
	}
	return items, nil
}

// rollout is the rollout the judge scores for the item.
func (it GoldItem) rollout() *dataset.Rollout {
	return &dataset.Rollout{RolloutID: "gold-" + it.ID, GroupID: "gold-" + it.ID, PromptID: "gold-" + it.ID,
		Task: it.Task, Final: it.Final, Personas: it.Personas, Agreed: true}
}

// goldCheck scores a gold set again every few steps (LoopOptions.Gold).
type goldCheck struct {
	items       []GoldItem
	every       int
	concurrency int
	log         *zap.Logger
	// warned is set once the moved items are warned about.
	warned bool
}

// GoldResult is what scoring a gold set again found.
type GoldResult struct {
	// Scored counts the items the judge scored (a judge failure is not
	// scored, and logged); Moved names those whose score differs from the
	// file's, in the file's order.
	Scored, Failed int
	Moved          []string
	// MeanAbsChange is the mean of |new - stored| over the scored items.
	MeanAbsChange float64
}

// ScoreGold scores items with j, at most concurrency at once, and compares
// the scores with the stored ones. Only ctx's end is an error.
func ScoreGold(ctx context.Context, j reward.Judge, items []GoldItem, concurrency int, log *zap.Logger) (GoldResult, error) {
	rs := make([]*dataset.Rollout, len(items))
	for i, it := range items {
		rs[i] = it.rollout()
	}
	outs := judgeEach(ctx, j, rs, concurrency)
	if err := ctx.Err(); err != nil {
		return GoldResult{}, err
	}
	var g GoldResult
	var sumAbs float64
	for i, o := range outs {
		if o.err != nil {
			g.Failed++
			log.Warn("gold item not scored: judge failure", zap.String("id", items[i].ID), zap.Error(o.err))
			continue
		}
		g.Scored++
		d := math.Abs(o.res.Score - *items[i].Score)
		sumAbs += d
		if d > 1e-9 {
			g.Moved = append(g.Moved, items[i].ID)
		}
	}
	if g.Scored > 0 {
		g.MeanAbsChange = sumAbs / float64(g.Scored)
	}
	return g, nil
}

// add scores the gold set at every K-th step and writes the judge/gold_*
// keys into m; it warns once, naming the items, when a score moved.
func (gc *goldCheck) add(ctx context.Context, step int, j reward.Judge, m metrics.Line) error {
	if gc == nil || gc.every <= 0 || step%gc.every != 0 {
		return nil
	}
	g, err := ScoreGold(ctx, j, gc.items, gc.concurrency, gc.log)
	if err != nil {
		return fmt.Errorf("train.Loop step %d: gold set: %w", step, err)
	}
	m[metrics.KeyJudgeGoldScored] = g.Scored
	if g.Scored == 0 {
		return nil
	}
	m[metrics.KeyJudgeGoldMovedShare] = float64(len(g.Moved)) / float64(g.Scored)
	m[metrics.KeyJudgeGoldMeanAbsChange] = g.MeanAbsChange
	if len(g.Moved) > 0 && !gc.warned {
		gc.warned = true
		gc.log.Warn("the judge changed under the run: gold items scored differently from the gold set's scores (warned once)",
			zap.Int("step", step), zap.Strings("moved", g.Moved), zap.Int("scored", g.Scored), zap.Float64("mean_abs_change", g.MeanAbsChange))
	}
	return nil
}
