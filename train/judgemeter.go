package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// judgeMeter turns the judge's chat counters into the judge/ keys of each
// step line (metrics.JudgePrefix): what the judge was asked and paid
// since the previous step line, the backends that answered, and, with a
// price, the cost. It warns once when a backend answers that no earlier
// step saw: the judge changed under the run.
type judgeMeter struct {
	client *chat.Client
	// cost prices prompt and completion tokens; nil: no cost keys.
	cost  func(prompt, completion int64) float64
	log   *zap.Logger
	prev  chat.Stats
	total float64
	// seen holds the backends earlier steps saw; warned is set once the
	// change is warned about.
	seen   map[chat.Backend]bool
	warned bool
}

// newJudgeMeter returns the meter of j, or nil when j asks no LLM
// (reward.Metered). costSoFar is the run's cost metrics.jsonl recorded.
func newJudgeMeter(j reward.Judge, cost func(prompt, completion int64) float64, costSoFar float64, log *zap.Logger) *judgeMeter {
	mj, ok := j.(reward.Metered)
	if !ok || mj.ChatClient() == nil {
		return nil
	}
	c := mj.ChatClient()
	return &judgeMeter{client: c, cost: cost, log: log, prev: c.Stats(), total: costSoFar, seen: map[chat.Backend]bool{}}
}

// BackendLabel is a backend as metrics.KeyJudgeBackends lists it: "model
// fingerprint", "-" for what the API did not send.
func BackendLabel(b chat.Backend) string {
	m, fp := b.Model, b.Fingerprint
	if m == "" {
		m = "-"
	}
	if fp == "" {
		fp = "-"
	}
	return m + " " + fp
}

// add writes the judge keys of the span since the previous call into m.
func (jm *judgeMeter) add(step int, m metrics.Line) {
	if jm == nil {
		return
	}
	now := jm.client.Stats()
	d, lat := jm.client.Between(jm.prev, now)
	jm.prev = now
	m[metrics.KeyJudgeCalls], m[metrics.KeyJudgeCallsFailed], m[metrics.KeyJudgeCacheHits] = d.Requests, d.Failures, d.CacheHits
	m[metrics.KeyJudgeAttempts], m[metrics.KeyJudgeRetries], m[metrics.KeyJudge429] = d.Attempts, d.Retries, d.RateLimited
	m[metrics.KeyJudgePromptTokens], m[metrics.KeyJudgeCompletionTokens], m[metrics.KeyJudgeCachedTokens] = d.PromptTokens, d.CompletionTokens, d.CachedTokens
	if d.PromptTokens > 0 {
		m[metrics.KeyJudgeCachedShare] = float64(d.CachedTokens) / float64(d.PromptTokens)
	}
	if len(lat) > 0 {
		m[metrics.KeyJudgeLatencyP50], m[metrics.KeyJudgeLatencyP95] = percentile(lat, 0.5).Seconds(), percentile(lat, 0.95).Seconds()
	}
	if jm.cost != nil {
		c := jm.cost(d.PromptTokens, d.CompletionTokens)
		jm.total += c
		m[metrics.KeyJudgeCost], m[metrics.KeyJudgeCostTotal] = c, jm.total
	}
	labels := []string{}
	var fresh []chat.Backend
	for b := range d.Backends {
		labels = append(labels, BackendLabel(b))
		if !jm.seen[b] {
			fresh = append(fresh, b)
		}
	}
	sort.Strings(labels)
	m[metrics.KeyJudgeBackends] = labels
	changes := 0
	if len(jm.seen) > 0 {
		changes = len(fresh)
	}
	m[metrics.KeyJudgeBackendChanges] = changes
	if changes > 0 && !jm.warned {
		jm.warned = true
		before := make([]string, 0, len(jm.seen))
		for b := range jm.seen {
			before = append(before, BackendLabel(b))
		}
		slices.Sort(before)
		jm.log.Warn("the judge changed under the run: a model or system fingerprint no earlier step saw answered (scores before and after may not compare; warned once)",
			zap.Int("step", step), zap.Strings("before", before), zap.Strings("now", labels))
	}
	for _, b := range fresh {
		jm.seen[b] = true
	}
}

// percentile is the q-quantile of ds (nearest rank); ds is sorted in place.
func percentile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.999999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// recordedJudgeCost is the run's judge cost as d last recorded it
// (metrics.KeyJudgeCostTotal; 0 without): the most of metrics.jsonl's
// lines and of the step sidecars (a step judged but not yet recorded was
// paid for too), so that a resumed run's total goes on from it.
func recordedJudgeCost(d dataset.RunDir) (float64, error) {
	total := 0.0
	b, err := os.ReadFile(d.MetricsPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("train: read %s: %w", d.MetricsPath(), err)
	default:
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			if !bytes.Contains(sc.Bytes(), []byte(metrics.KeyJudgeCostTotal)) {
				continue
			}
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if v, ok := m[string(metrics.KeyJudgeCostTotal)].(float64); ok {
				total = max(total, v)
			}
		}
	}
	sidecars, _ := filepath.Glob(filepath.Join(d.Root(), dataset.RolloutsDirName, "*"+dataset.SidecarExt))
	for _, p := range sidecars {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(metrics.KeyJudgeCostTotal)) {
			continue
		}
		var sc struct {
			Metrics map[string]any `json:"metrics"`
		}
		if json.Unmarshal(b, &sc) != nil {
			continue
		}
		if v, ok := sc.Metrics[string(metrics.KeyJudgeCostTotal)].(float64); ok {
			total = max(total, v)
		}
	}
	return total, nil
}
