package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parleyhq/parley/figure"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/metrics"
)

// judgeKeys are the step line's keys about the judge's API that the
// Judge section tables (first and last window).
var judgeKeys = []metrics.Key{metrics.KeyJudgeCalls, metrics.KeyJudgeCacheHits, metrics.KeyJudgePromptTokens, metrics.KeyJudgeCompletionTokens,
	metrics.KeyJudgeCachedShare, metrics.KeyJudgeLatencyP50, metrics.KeyJudgeLatencyP95, metrics.KeyJudge429, metrics.KeyJudgeRetries,
	metrics.KeyJudgeCallsFailed, metrics.KeyJudgeCost}

func init() {
	for k, v := range map[metrics.Key]string{
		metrics.KeyJudgeCalls:            "judge calls (requests, retries inside)",
		metrics.KeyJudgeCallsFailed:      "judge calls failed after retries",
		metrics.KeyJudgeCacheHits:        "verdicts from the judge cache",
		metrics.KeyJudgeAttempts:         "HTTP attempts",
		metrics.KeyJudgeRetries:          "retries",
		metrics.KeyJudge429:              "HTTP 429 answers (rate limited)",
		metrics.KeyJudgePromptTokens:     "prompt tokens",
		metrics.KeyJudgeCompletionTokens: "completion tokens",
		metrics.KeyJudgeCachedTokens:     "cached prompt tokens",
		metrics.KeyJudgeCachedShare:      "cached share of prompt tokens",
		metrics.KeyJudgeLatencyP50:       "call latency p50, s",
		metrics.KeyJudgeLatencyP95:       "call latency p95, s",
		metrics.KeyJudgeCost:             "cost per step (judge.price)",
		metrics.KeyJudgeCostTotal:        "cost of the run so far",
		metrics.KeyJudgeCorrPersonaEcho:  "corr(reward, persona 3-gram echo)",
		metrics.KeyJudgeCorrLength:       "corr(reward, final length in words)",
		metrics.KeyJudgeCorrAgreement:    "corr(reward, agreement phrases)",
		metrics.KeyAuditTrainScoreMean:   "training judge's mean score (audited finals)",
		metrics.KeyAuditScoreMean:        "audit judge's mean score (audited finals)",
		metrics.KeyAuditExact:            "exact agreement, %",
		metrics.KeyAuditWithinOne:        "±1 agreement, %",
		metrics.KeyAuditPearson:          "Pearson r",
		metrics.KeyAuditKappa:            "quadratic-weighted κ",
	} {
		metricLabels[k] = v
	}
}

// judgeLatencyPanel charts the judge calls' latency per step.
var judgeLatencyPanel = panel{file: "judge_latency.png", title: "Judge call latency", ylab: "seconds, first attempt to last", raw: true,
	lines: []chartLine{
		{key: metrics.KeyJudgeLatencyP95, label: "p95", style: figure.StyleDashed, color: colorMax},
		{key: metrics.KeyJudgeLatencyP50, label: "p50", style: figure.StyleSolid, color: colorMean},
	}}

// judgeSection is the report's Judge section: what the judge's API was
// asked and paid over the run (totals, first against last window, the
// latency chart) and the backends (model and system fingerprint) that
// answered, with a warning when they changed under the run. A run whose
// judge asks no LLM (a rule or game scorer) has none.
func (g *generator) judgeSection(m *Metrics) error {
	if !m.Has(metrics.KeyJudgeCalls) {
		return nil
	}
	w := g.window(len(m.Steps))
	g.printf("## Judge\n\n")
	g.printf("### Cost and latency\n\n")
	g.printf("What the judge's API was asked and paid, as parley train counted it in the judge's chat client (`judge/…` in metrics.jsonl). " +
		"A call is one request with all its retries; a verdict from the judge cache is no call. Tokens are the usage the API reported " +
		"on every answered attempt (a rejected reply that was retried was paid for); latency runs from a call's first attempt to its last.\n\n")
	sum := m.Sum
	_, p50s := m.Series(metrics.KeyJudgeLatencyP50)
	_, p95s := m.Series(metrics.KeyJudgeLatencyP95)
	steps, _ := m.Series(metrics.KeyJudgeCalls)
	rows := [][]string{
		{"steps metered", fmt.Sprint(len(steps))},
		{"judge calls", fmt.Sprint(sum(metrics.KeyJudgeCalls))},
		{"calls failed after retries", fmt.Sprint(sum(metrics.KeyJudgeCallsFailed))},
		{"verdicts from the judge cache", fmt.Sprint(sum(metrics.KeyJudgeCacheHits))},
		{"HTTP attempts", fmt.Sprint(sum(metrics.KeyJudgeAttempts))},
		{"HTTP 429 answers", fmt.Sprint(sum(metrics.KeyJudge429))},
		{"retries", fmt.Sprint(sum(metrics.KeyJudgeRetries))},
		{"prompt tokens", fmt.Sprint(sum(metrics.KeyJudgePromptTokens))},
		{"completion tokens", fmt.Sprint(sum(metrics.KeyJudgeCompletionTokens))},
	}
	if p := sum(metrics.KeyJudgePromptTokens); p > 0 {
		rows = append(rows, []string{"cached share of prompt tokens", fmt.Sprintf("%.1f %%", 100*sum(metrics.KeyJudgeCachedTokens)/p)})
	}
	if len(p50s) > 0 {
		rows = append(rows, []string{"call latency p50, median over steps", fmt.Sprintf("%.3f s", median(p50s))},
			[]string{"call latency p95, worst step", fmt.Sprintf("%.3f s", slices.Max(p95s))})
	}
	if m.Has(metrics.KeyJudgeCost) {
		costSteps, _ := m.Series(metrics.KeyJudgeCost)
		total := sum(metrics.KeyJudgeCost)
		rows = append(rows, []string{"cost of the run (judge.price)", fmt.Sprintf("%.4f", total)},
			[]string{"cost per step (mean)", fmt.Sprintf("%.4f", total/float64(len(costSteps)))})
	} else {
		rows = append(rows, []string{"cost", "no judge.price set"})
	}
	g.table([]string{"over the run", "total"}, rows)
	g.summaryTable(m, judgeKeys, w)
	if err := g.chart(m, judgeLatencyPanel, w); err != nil {
		return err
	}
	if err := g.backendsTable(m); err != nil {
		return err
	}
	g.goldTable(m)
	g.monitorsTable(m, w)
	return g.auditPart(m, w)
}

// auditPanels chart the audit judge against the training judge on the
// audited finals, and their agreement, per audited step.
func auditPanels(limits [2]float64) []panel {
	return []panel{
		{file: "judge_audit_reward.png", title: "Training judge against audit judge", ylab: "mean score of the audited finals", raw: true, limits: limits,
			lines: []chartLine{
				{key: metrics.KeyAuditTrainScoreMean, label: "training judge", style: figure.StyleSolid, color: colorMean},
				{key: metrics.KeyAuditScoreMean, label: "audit judge", style: figure.StyleDashed, color: colorMax},
			}},
		{file: "judge_audit_agreement.png", title: "Agreement of the two judges", ylab: "% of audited finals", raw: true, limits: percentLimits,
			lines: []chartLine{
				{key: metrics.KeyAuditWithinOne, label: "±1", style: figure.StyleDashed, color: colorMax},
				{key: metrics.KeyAuditExact, label: "exact", style: figure.StyleSolid, color: colorMean},
			}},
	}
}

// auditKeys are the audit line's keys the Audit part tables.
var auditKeys = []metrics.Key{metrics.KeyAuditTrainScoreMean, metrics.KeyAuditScoreMean, metrics.KeyAuditExact,
	metrics.KeyAuditWithinOne, metrics.KeyAuditPearson, metrics.KeyAuditKappa}

// auditPart is the Judge section's audit judge (judge.audit): both judges'
// mean score and their agreement over the audited steps, the audit
// judge's failures, and the over-optimisation alarm, marked when it fired.
func (g *generator) auditPart(m *Metrics, w int) error {
	steps, _ := m.Series(metrics.KeyAuditSampled)
	if len(steps) == 0 {
		return nil
	}
	g.printf("### Audit judge\n\n")
	g.printf("A second judge (judge.audit) scored a seeded sample of each step's judged finals beside training, never blocking it " +
		"(`audit/…` lines in metrics.jsonl, records in audit/step-N.json). Agreement is seed 000's table 7 on the rubric's levels, " +
		"over the finals both judges scored. The over-optimisation alarm fires when, over judge.audit.alarm_window audited steps, " +
		"the training judge's mean rose by judge.audit.alarm_threshold while the audit judge's fell by as much: the policy learning " +
		"the training judge's quirks (Gao et al., 2022).\n\n")
	alarmSteps, alarms := m.Series(metrics.KeyAuditAlarm)
	var fired []string
	for i, s := range alarmSteps {
		if alarms[i] == 1 {
			fired = append(fired, fmt.Sprint(s))
		}
	}
	if len(fired) > 0 {
		noun := "step"
		if len(fired) > 1 {
			noun = "steps"
		}
		g.printf("**⚠ Over-optimisation alarm fired** at %s %s: the training judge's reward rose while the audit judge's fell. "+
			"Read the audited finals of those steps (audit/step-N.json) before trusting the training curves.\n\n", noun, strings.Join(fired, ", "))
	} else {
		g.printf("The over-optimisation alarm did not fire.\n\n")
	}
	g.table([]string{"over the run", "total"}, [][]string{
		{"steps audited", fmt.Sprint(len(steps))},
		{"finals sampled", fmt.Sprint(m.Sum(metrics.KeyAuditSampled))},
		{"scored by the audit judge", fmt.Sprint(m.Sum(metrics.KeyAuditScored))},
		{"audit judge failures (down, rate-limited, garbage)", fmt.Sprint(m.Sum(metrics.KeyAuditFailed))},
	})
	var keys []metrics.Key
	for _, k := range auditKeys {
		if m.Has(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		g.printf("The audit judge scored no final both judges could be compared on.\n\n")
		return nil
	}
	g.summaryTable(m, keys, w)
	for _, c := range auditPanels(scoreLimits(g.scale)) {
		if err := g.chart(m, c, w); err != nil {
			return err
		}
	}
	return nil
}

// goldTable lists the steps that scored the gold set again (judge.gold):
// a score that moved means the judge changed under the run.
func (g *generator) goldTable(m *Metrics) {
	steps, scored := m.Series(metrics.KeyJudgeGoldScored)
	if len(steps) == 0 {
		return
	}
	moved, abs := map[float64]float64{}, map[float64]float64{}
	for k, into := range map[metrics.Key]map[float64]float64{metrics.KeyJudgeGoldMovedShare: moved, metrics.KeyJudgeGoldMeanAbsChange: abs} {
		xs, ys := m.Series(k)
		for i, x := range xs {
			into[x] = ys[i]
		}
	}
	g.printf("### Gold-set drift\n\n")
	g.printf("The gold set (judge.gold.path) scored again every judge.gold.every steps against the scores stored with it: " +
		"a score that moved means the judge changed under the run (a model update, a new system fingerprint, a changed prompt).\n\n")
	rows := make([][]string, 0, len(steps))
	for i, s := range steps {
		rows = append(rows, []string{fmt.Sprint(s), fmt.Sprint(scored[i]), fmt.Sprintf("%.1f %%", 100*moved[s]), fmt.Sprintf("%.3f", abs[s])})
	}
	g.table([]string{"step", "items scored", "moved", "mean abs change"}, rows)
}

// monitorKeys are the reward-hacking monitors the Judge section tables.
var monitorKeys = []metrics.Key{metrics.KeyJudgeCorrLength, metrics.KeyJudgeCorrPersonaEcho, metrics.KeyJudgeCorrAgreement}

// monitorsTable tables the reward-hacking monitors (first and last
// window) when the run wrote any.
func (g *generator) monitorsTable(m *Metrics, w int) {
	var keys []metrics.Key
	for _, k := range monitorKeys {
		if m.Has(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	g.printf("### Hacking monitors\n\n")
	g.printf("Pearson correlation, per step over the trained policy's judged rollouts, of the score with the final's length in words, " +
		"the share of its word 3-grams found in the persona texts, and its count of agreement phrases (reward.AgreementPhrases). " +
		"A correlation that grows over the run is a sign the policy learns the judge's taste rather than the task.\n\n")
	g.summaryTable(m, keys, w)
}

// backendSpan is a judge backend and the steps it answered at.
type backendSpan struct {
	label       string
	first, last int
	steps       int
}

// backendsTable lists the backends (model and system fingerprint) that
// answered the judge, read from metrics.jsonl's metrics.KeyJudgeBackends
// lists, and warns when more than one did: the judge changed under the
// run.
func (g *generator) backendsTable(m *Metrics) error {
	spans, err := readBackends(m.File)
	if err != nil {
		g.note("%s: the judge's backends unreadable (%v)", m.File, err)
		return nil
	}
	if len(spans) == 0 {
		return nil
	}
	g.printf("### Judge backends\n\n")
	g.printf("The model and system fingerprint the judge's replies reported (\"-\": none sent).\n\n")
	var rows [][]string
	for _, s := range spans {
		rows = append(rows, []string{"`" + s.label + "`", fmt.Sprint(s.first), fmt.Sprint(s.last), fmt.Sprint(s.steps)})
	}
	g.table([]string{"model fingerprint", "first step", "last step", "steps"}, rows)
	if len(spans) > 1 {
		g.printf("**The judge changed under the run**: from step %d a backend answered that earlier steps had not seen (`%s`). "+
			"Scores before and after may not compare: an API model update or a new system fingerprint.\n\n", spans[1].first, spans[1].label)
	}
	return nil
}

// readBackends reads each step line's metrics.KeyJudgeBackends from a
// metrics.jsonl (ReadMetrics keeps numbers only), in order of first
// appearance.
func readBackends(path string) ([]backendSpan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var spans []backendSpan
	at := map[string]int{}
	br := textfile.NewReader(f, 64<<10)
	for {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, err
		}
		if bytes.Contains(b, []byte(metrics.KeyJudgeBackends)) {
			var line struct {
				Step     *int     `json:"step"`
				Backends []string `json:"judge/backends"`
			}
			if json.Unmarshal(bytes.TrimSpace(b), &line) == nil && line.Step != nil {
				for _, l := range line.Backends {
					i, ok := at[l]
					if !ok {
						i = len(spans)
						at[l] = i
						spans = append(spans, backendSpan{label: l, first: *line.Step, last: *line.Step})
					}
					s := &spans[i]
					s.first, s.last, s.steps = min(s.first, *line.Step), max(s.last, *line.Step), s.steps+1
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	slices.SortStableFunc(spans, func(a, b backendSpan) int { return a.first - b.first })
	return spans, nil
}

// median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
