package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/metrics"
)

// metricLine is one line of metrics.jsonl: its step, whether it is an
// evaluation line, and its numeric values.
type metricLine struct {
	step   float64
	eval   bool
	values map[string]float64
}

// readMetrics reads metrics.jsonl; a last line without its newline (being
// written) is left for the next read, and an unreadable line is named in
// bad and skipped. A missing file has no lines.
func readMetrics(path string) ([]metricLine, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []metricLine
	bad := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			if bad == "" {
				bad = "line " + strconv.Itoa(n) + ": " + err.Error() + " (skipped)"
			}
			continue
		}
		step, ok := raw[string(metrics.KeyStep)].(float64)
		if !ok {
			continue
		}
		l := metricLine{step: step, eval: raw[string(metrics.KeyKind)] == metrics.EvalKind, values: map[string]float64{}}
		for k, v := range raw {
			if x, ok := v.(float64); ok && !math.IsNaN(x) && !math.IsInf(x, 0) && k != string(metrics.KeyStep) {
				l.values[k] = x
			}
		}
		out = append(out, l)
	}
	return out, bad, sc.Err()
}

// series is one curve: [step, value] points.
type series struct {
	Key    string       `json:"key"`
	Label  string       `json:"label"`
	Points [][2]float64 `json:"points"`
}

// band is a shaded range: [step, low, high] points.
type band struct {
	Label  string       `json:"label"`
	Points [][3]float64 `json:"points"`
}

// chart is one chart of the overview.
type chart struct {
	ID     string   `json:"id"`
	Group  string   `json:"group"`
	Title  string   `json:"title"`
	Series []series `json:"series"`
	Band   *band    `json:"band,omitempty"`
}

// chartSpec says which keys a chart draws.
type chartSpec struct {
	group, id, title string
	keys             []metrics.Key
	labels           []string
	eval             bool // keys of evaluation lines
	lo, hi           metrics.Key
}

// fixedCharts are the overview's charts of known keys, in order.
var fixedCharts = []chartSpec{
	{group: "Training", id: "reward", title: "Reward: judge score, group mean with the group min–max band (averaged over groups)",
		keys: []metrics.Key{metrics.KeyScoreMean}, labels: []string{"score mean"}, lo: metrics.KeyScoreMin, hi: metrics.KeyScoreMax},
	{group: "Training", id: "reward_mean", title: "Reward mean (and per role)", keys: []metrics.Key{metrics.KeyRewardMean}, labels: []string{"reward mean"}},
	{group: "Training", id: "agreement", title: "Agreement rate", keys: []metrics.Key{metrics.KeyAgreementRate}, labels: []string{"agreement rate"}},
	{group: "Training", id: "rounds", title: "Rounds", keys: []metrics.Key{metrics.KeyRoundsToAgreement, metrics.KeyMeanRounds}, labels: []string{"rounds to agreement", "mean rounds"}},
	{group: "Evaluation", id: "eval_win_rate", title: "Held-out win rate against the base (%)", keys: []metrics.Key{metrics.KeyEvalWinRate}, labels: []string{"win rate %"}, eval: true},
	{group: "Evaluation", id: "eval_score", title: "Held-out judge score: adapter and base", keys: []metrics.Key{metrics.KeyEvalScoreMean, metrics.KeyEvalBaseScoreMean}, labels: []string{"adapter", "base"}, eval: true},
	{group: "Judge", id: "audit_scores", title: "Audit judge: the training judge's and the audit judge's mean score on the audited finals",
		keys: []metrics.Key{metrics.KeyAuditTrainScoreMean, metrics.KeyAuditScoreMean}, labels: []string{"training judge", "audit judge"}},
	{group: "Judge", id: "audit_agreement", title: "Audit judge: agreement with the training judge (%)",
		keys: []metrics.Key{metrics.KeyAuditExact, metrics.KeyAuditWithinOne}, labels: []string{"exact", "±1"}},
	{group: "Judge", id: "audit_alarm", title: "Audit judge: over-optimisation alarm (1: fired)",
		keys: []metrics.Key{metrics.KeyAuditAlarm}, labels: []string{"alarm"}},
	{group: "Serving", id: "prefix_cache", title: "Prefix-cache hit rate", keys: []metrics.Key{metrics.KeyPrefixCacheHitRate}, labels: []string{"hit rate"}},
	{group: "Serving", id: "load", title: "Endpoint load", keys: []metrics.Key{metrics.KeyEndpointLoadMean, metrics.KeyEndpointLoadMax, metrics.KeyEndpointInFlightMean}, labels: []string{"load mean", "load max", "in flight mean"}},
	{group: "Serving", id: "server_running", title: "Requests running on the server", keys: []metrics.Key{metrics.KeyServerRunningMean, metrics.KeyServerRunningMin}, labels: []string{"mean", "min"}},
	{group: "Serving", id: "timings", title: "Step time (s)", keys: []metrics.Key{metrics.KeySampleSeconds, metrics.KeyJudgeSeconds, metrics.KeyWaitTrainerSeconds}, labels: []string{"sample", "judge", "wait for trainer"}},
}

// titles are the chart titles of the trainer's and the judge's known keys
// (the others are titled by their key).
var titles = map[metrics.Key]string{
	metrics.KeyTrainerLoss:            "Trainer: loss",
	metrics.KeyTrainerKL:              "Trainer: approximate KL to the sampling policy",
	metrics.KeyTrainerKLRef:           "Trainer: KL to the reference",
	metrics.KeyTrainerEntropy:         "Trainer: entropy",
	metrics.KeyTrainerGradNorm:        "Trainer: gradient norm",
	metrics.KeyTrainerGradNormMax:     "Trainer: largest gradient norm",
	metrics.KeyTrainerClipFrac:        "Trainer: clipped fraction",
	metrics.KeyJudgeCalls:             "Judge: calls",
	metrics.KeyJudgeCallsFailed:       "Judge: failed calls",
	metrics.KeyJudgeCacheHits:         "Judge: cache hits",
	metrics.KeyJudgeRetries:           "Judge: retries",
	metrics.KeyJudge429:               "Judge: HTTP 429 answers",
	metrics.KeyJudgeLatencyP50:        "Judge: latency p50 (s)",
	metrics.KeyJudgeLatencyP95:        "Judge: latency p95 (s)",
	metrics.KeyJudgeCost:              "Judge: cost per step (USD)",
	metrics.KeyJudgeCostTotal:         "Judge: cost so far (USD)",
	metrics.KeyJudgeCachedShare:       "Judge: prompt-cache share",
	metrics.KeyJudgeCorrLength:        "Judge: score vs the final's length (Pearson r)",
	metrics.KeyJudgeCorrPersonaEcho:   "Judge: score vs persona echo (Pearson r)",
	metrics.KeyJudgeCorrAgreement:     "Judge: score vs agreement phrases (Pearson r)",
	metrics.KeyJudgeGoldMovedShare:    "Judge: gold items whose score moved",
	metrics.KeyJudgeGoldMeanAbsChange: "Judge: gold items' mean absolute change",
}

// buildCharts turns metrics lines into the overview's charts: the fixed
// charts that have data, then one per trainer key (trainer/*) and per judge
// key (judge/*), then the league's ratings.
func buildCharts(lines []metricLine) []chart {
	pts := func(key string, eval bool) [][2]float64 {
		var out [][2]float64
		for _, l := range lines {
			if l.eval != eval {
				continue
			}
			if v, ok := l.values[key]; ok {
				out = append(out, [2]float64{l.step, v})
			}
		}
		return out
	}
	out := []chart{}
	for _, c := range fixedCharts {
		ch := chart{ID: c.id, Group: c.group, Title: c.title}
		for i, k := range c.keys {
			if p := pts(string(k), c.eval); len(p) > 0 {
				ch.Series = append(ch.Series, series{Key: string(k), Label: c.labels[i], Points: p})
			}
		}
		if c.id == "reward_mean" {
			for _, k := range prefixed(lines, string(metrics.RoleRewardPrefix), false) {
				ch.Series = append(ch.Series, series{Key: k, Label: "role " + strings.TrimPrefix(k, string(metrics.RoleRewardPrefix)), Points: pts(k, false)})
			}
		}
		if c.lo != "" {
			b := &band{Label: "group min–max"}
			for _, l := range lines {
				lo, ok1 := l.values[string(c.lo)]
				hi, ok2 := l.values[string(c.hi)]
				if !l.eval && ok1 && ok2 {
					b.Points = append(b.Points, [3]float64{l.step, lo, hi})
				}
			}
			if len(b.Points) > 0 {
				ch.Band = b
			}
		}
		if len(ch.Series) > 0 {
			out = append(out, ch)
		}
	}
	for _, g := range []struct {
		group, prefix string
	}{{"Trainer", string(metrics.TrainerPrefix)}, {"Judge", string(metrics.JudgePrefix)}, {"League", string(metrics.LeagueRatingPrefix)}} {
		for _, k := range prefixed(lines, g.prefix, false) {
			if k == string(metrics.KeyTrainerEmptyBatch) {
				continue
			}
			title := titles[metrics.Key(k)]
			if title == "" {
				title = k
			}
			out = append(out, chart{ID: k, Group: g.group, Title: title, Series: []series{{Key: k, Label: strings.TrimPrefix(k, g.prefix), Points: pts(k, false)}}})
		}
	}
	return out
}

// prefixed lists the keys under prefix that some line has, sorted.
func prefixed(lines []metricLine, prefix string, eval bool) []string {
	seen := map[string]bool{}
	for _, l := range lines {
		if l.eval != eval {
			continue
		}
		for k := range l.values {
			if strings.HasPrefix(k, prefix) {
				seen[k] = true
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
