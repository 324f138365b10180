package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/metrics"
)

// samplingKeys are the step line's keys about how the step's groups were
// sampled: dynamic sampling's and the stream's.
var samplingKeys = []metrics.Key{metrics.KeyGroupsSampled, metrics.KeyGroupsInformative, metrics.KeyGroupsTrained, metrics.KeyOversampleRatio,
	metrics.KeyGroupsCancelledStale, metrics.KeyGroupsDroppedStale, metrics.KeyGroupsResumed}

func init() {
	for k, v := range map[metrics.Key]string{
		metrics.KeyGroupsSampled:             "groups sampled",
		metrics.KeyGroupsInformative:         "groups with an advantage",
		metrics.KeyGroupsTrained:             "groups trained",
		metrics.KeyOversampleRatio:           "groups sampled per group the batch asks for",
		metrics.KeyGroupsCancelledStale:      "groups cancelled in flight (too old)",
		metrics.KeyGroupsDroppedStale:        "groups dropped once judged (too old)",
		metrics.KeyGroupsResumed:             "groups read back from the stream journal",
		metrics.KeyCurriculumRetiredSolved:   "prompt rows resting, solved",
		metrics.KeyCurriculumRetiredHopeless: "prompt rows resting, hopeless",
		metrics.KeyServerRunningMean:         "requests running on the servers (mean of readings)",
		metrics.KeyServerRunningMin:          "requests running on the servers (least reading)",
	} {
		metricLabels[k] = v
	}
}

// samplingSection tables how the groups were sampled (dynamic sampling,
// streaming) and, with the adaptive curriculum, its draw per category,
// the rows resting and the reward curves of the rows drawn most.
func (g *generator) samplingSection(m *Metrics, w int) error {
	has := false
	for _, k := range samplingKeys {
		has = has || m.Has(k)
	}
	if has {
		g.printf("### Sampling\n\n")
		g.summaryTable(m, samplingKeys, w)
	}
	var cats []string
	draws := map[string]float64{}
	total := 0.0
	for _, k := range m.Keys() {
		if c, ok := strings.CutPrefix(string(k), string(metrics.CurriculumDrawPrefix)); ok {
			_, ys := m.Series(k)
			for _, y := range ys {
				draws[c] += y
				total += y
			}
			cats = append(cats, c)
		}
	}
	if len(cats) == 0 {
		return nil
	}
	g.printf("### Curriculum (adaptive)\n\n")
	sort.Strings(cats)
	var rows [][]string
	for _, c := range cats {
		rows = append(rows, []string{c, fmt.Sprint(draws[c]), fmt.Sprintf("%.1f %%", 100*draws[c]/total)})
	}
	g.table([]string{"category", "groups drawn", "share"}, rows)
	g.summaryTable(m, []metrics.Key{metrics.KeyCurriculumRetiredSolved, metrics.KeyCurriculumRetiredHopeless}, w)
	return g.promptCurves(m)
}

// promptCurves draws the mean reward of the groups of the four prompt
// rows drawn most, step by step, from the run's rollouts.
func (g *generator) promptCurves(m *Metrics) error {
	if g.opts.RunDir == "" {
		return nil
	}
	d := dataset.RunDir(g.opts.RunDir)
	type point struct{ sum, n float64 }
	byPrompt := map[string]map[int]*point{}
	for _, step := range m.Steps {
		err := dataset.ReadRollouts(d.RolloutsPath(step), func(r dataset.Rollout) error {
			if r.Failed || !r.Judged {
				return nil
			}
			if byPrompt[r.PromptID] == nil {
				byPrompt[r.PromptID] = map[int]*point{}
			}
			p := byPrompt[r.PromptID][step]
			if p == nil {
				p = &point{}
				byPrompt[r.PromptID][step] = p
			}
			p.sum += float64(r.Score)
			p.n++
			return nil
		})
		if err != nil {
			g.note("rollouts of step %d unreadable (%v): prompt curves left out", step, err)
			return nil
		}
	}
	ids := make([]string, 0, len(byPrompt))
	for id := range byPrompt {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if len(byPrompt[ids[i]]) != len(byPrompt[ids[j]]) {
			return len(byPrompt[ids[i]]) > len(byPrompt[ids[j]])
		}
		return ids[i] < ids[j]
	})
	if len(ids) > 4 {
		ids = ids[:4]
	}
	var lines []figure.Line
	for i, id := range ids {
		var xs, ys []float64
		steps := make([]int, 0, len(byPrompt[id]))
		for s := range byPrompt[id] {
			steps = append(steps, s)
		}
		sort.Ints(steps)
		for _, s := range steps {
			p := byPrompt[id][s]
			xs, ys = append(xs, float64(s)), append(ys, p.sum/p.n)
		}
		lines = append(lines, figure.Line{Label: id, X: xs, Y: ys, Color: figure.Palette(i)})
	}
	if len(lines) == 0 {
		return nil
	}
	const file = "curriculum_prompts.png"
	c := figure.Chart{Title: "Mean score of the prompt rows drawn most, by step", XLabel: "step", YLabel: "score (" + g.scoreLabel() + ")",
		Lines: lines, WidthPx: g.opts.WidthPx, HeightPx: g.opts.HeightPx}
	lim := scoreLimits(g.scale)
	c.YMin, c.YMax = lim[0], lim[1]
	if n := len(m.Steps); n > 0 {
		c.XMin, c.XMax = float64(m.Steps[0]), float64(m.Steps[n-1])
	}
	if err := c.WritePNG(filepath.Join(g.opts.OutDir, file)); err != nil {
		return err
	}
	g.printf("![the prompt rows drawn most](%s)\n\n", file)
	return nil
}
