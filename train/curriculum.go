package train

import (
	"sort"

	"github.com/parleyhq/parley/curriculum"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// drawRows draws n prompt rows for step with seed: by the adaptive sampler
// from cur when the run has one (LoopOptions.Curriculum), else uniformly
// within their categories (rollout.SelectPrompts). Either draw is a
// function of the seed, the step and, adaptively, cur.
func (l *Loop) drawRows(cur *curriculum.State, n int, seed int64, step int) []dataset.Prompt {
	if l.opts.Curriculum == nil || cur == nil {
		return rollout.SelectPrompts(l.opts.Prompts, l.opts.Mix, n, seed, step)
	}
	rows, ended := cur.Draw(l.opts.Prompts, l.opts.Mix, n, uint64(rollout.DeriveSeed(seed, "curriculum", 0)), step, *l.opts.Curriculum)
	for _, c := range ended {
		l.log.Warn("curriculum: every prompt row of the category rests (its groups came back with equal rewards): their cool-down ends early",
			zap.Int("step", step), zap.String("category", c), zap.String("key", "curriculum.adaptive.cooldown"))
	}
	return rows
}

// observeCurriculum is the adaptive sampler's statistics after step's
// judged rollouts rs (nil without the sampler): each group's rewards, of
// the trained role whose rewards spread most (a zero-sum game's sides
// spread alike; roles that share one reward are one), observed under
// its prompt row.
func (l *Loop) observeCurriculum(step int, rs []dataset.Rollout) *curriculum.State {
	if l.opts.Curriculum == nil {
		return nil
	}
	next := l.cur.Clone()
	type key struct{ group, role string }
	rewards := map[key][]float64{}
	prompt := map[string]string{}
	var groups []string
	for i := range rs {
		r := &rs[i]
		if _, ok := prompt[r.GroupID]; !ok {
			groups = append(groups, r.GroupID)
			prompt[r.GroupID] = r.PromptID
		}
		for k := range r.Roles {
			if ro := &r.Roles[k]; grpo.Scored(r, ro) {
				rewards[key{r.GroupID, ro.Role}] = append(rewards[key{r.GroupID, ro.Role}], float64(ro.Reward))
			}
		}
	}
	sort.Strings(groups)
	for _, g := range groups {
		var best []float64
		spread := -1.0
		var roles []string
		for k := range rewards {
			if k.group == g {
				roles = append(roles, k.role)
			}
		}
		sort.Strings(roles)
		for _, role := range roles {
			xs := rewards[key{g, role}]
			if sp := spreadOf(xs); sp > spread {
				best, spread = xs, sp
			}
		}
		next.Observe(step, prompt[g], best, *l.opts.Curriculum)
	}
	return next
}

// spreadOf is max − min of xs (0 when empty).
func spreadOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}

// curriculumMetrics adds the step's draw per category
// (curriculum/draw/<category>, in groups) and the rows resting after it
// (curriculum/retired_solved, _hopeless) to m, with the sampler.
func (l *Loop) curriculumMetrics(step int, rs []dataset.Rollout, next *curriculum.State, m metrics.Line) {
	if next == nil {
		return
	}
	seen := map[string]bool{}
	draw := map[string]int{}
	for _, r := range rs {
		if !seen[r.GroupID] {
			seen[r.GroupID] = true
			draw[r.Category]++
		}
	}
	for c, n := range draw {
		m[metrics.CurriculumDrawPrefix+metrics.Key(c)] = n
	}
	ret := next.Retired(step + 1)
	m[metrics.KeyCurriculumRetiredSolved] = ret["solved"]
	m[metrics.KeyCurriculumRetiredHopeless] = ret["hopeless"]
}
