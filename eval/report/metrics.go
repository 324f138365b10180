package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/metrics"
)

// Metrics is a run's metrics.jsonl read into numeric series: one merged row
// per step, in step order.
type Metrics struct {
	File  string                    // the path read
	Steps []int                     // ascending, distinct
	Rows  []map[metrics.Key]float64 // Rows[i] holds the numeric values of step Steps[i]
	Notes []string                  // lines skipped and why
}

// ReadMetrics reads a metrics.jsonl file: one JSON object per line with a
// numeric "step". Numbers are kept; nested objects are flattened with "/"
// ({"eval": {"score_mean": 3}} gives "eval/score_mean"); strings, booleans,
// nulls and lists are ignored. Lines for the same step are merged, later
// values winning (orchestrator and trainer may write separately). A line
// that is not a JSON object (say, cut short by a crash) or has no step is
// skipped with a note in Notes, not an error, so that a report can be made
// of a run that is still going or was interrupted.
func ReadMetrics(path string) (*Metrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("report.ReadMetrics: %w", err)
	}
	defer f.Close()
	m, err := decodeMetrics(f, path)
	if err != nil {
		return nil, fmt.Errorf("report.ReadMetrics: %w", err)
	}
	return m, nil
}

func decodeMetrics(r io.Reader, path string) (*Metrics, error) {
	name := filepath.Base(path)
	m := &Metrics{File: path}
	bySteps := map[int]map[metrics.Key]float64{}
	br := textfile.NewReader(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var obj map[string]any
			dec := json.NewDecoder(bytes.NewReader(t))
			dec.UseNumber()
			if derr := dec.Decode(&obj); derr != nil || dec.More() || obj == nil {
				m.Notes = append(m.Notes, fmt.Sprintf("%s line %d: not a JSON object, skipped", name, line))
			} else {
				vals := map[metrics.Key]float64{}
				flatten("", obj, vals)
				step, ok := vals[metrics.KeyStep]
				if !ok || step != math.Trunc(step) {
					m.Notes = append(m.Notes, fmt.Sprintf("%s line %d: no integer %q, skipped", name, line, metrics.KeyStep))
				} else {
					delete(vals, metrics.KeyStep)
					row := bySteps[int(step)]
					if row == nil {
						row = map[metrics.Key]float64{}
						bySteps[int(step)] = row
					}
					for k, v := range vals {
						row[k] = v
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	for s := range bySteps {
		m.Steps = append(m.Steps, s)
	}
	sort.Ints(m.Steps)
	for _, s := range m.Steps {
		dropUndefinedRounds(bySteps[s])
		m.Rows = append(m.Rows, bySteps[s])
	}
	return m, nil
}

// dropUndefinedRounds marks the rounds to agreement of a row whose
// agreement rate is 0 undefined (NaN), on the training set and on each
// side of an evaluation: without an agreement there are no rounds to
// agreement (the loop leaves the key out; runs before it wrote 0), and a
// chart must show a gap there, neither a dialogue that agreed at once nor
// a line joined over the step. Series and Has skip the NaN; SeriesGaps
// keeps it.
func dropUndefinedRounds(row map[metrics.Key]float64) {
	for _, prefix := range []metrics.Key{"", metrics.EvalPrefix, metrics.EvalPrefix + metrics.KeyBasePrefix} {
		if rate, ok := row[prefix+metrics.KeyAgreementRate]; ok && rate == 0 {
			row[prefix+metrics.KeyRoundsToAgreement] = math.NaN()
		}
	}
}

func flatten(prefix string, obj map[string]any, out map[metrics.Key]float64) {
	for k, v := range obj {
		key := prefix + k
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil && !math.IsInf(f, 0) {
				out[metrics.Key(key)] = f
			}
		case map[string]any:
			flatten(key+"/", x, out)
		}
	}
}

// Sum is the sum of key's values over the steps (NaN skipped, as Series
// does).
func (m *Metrics) Sum(key metrics.Key) float64 {
	_, ys := m.Series(key)
	t := 0.0
	for _, y := range ys {
		t += y
	}
	return t
}

// Has reports whether any step has a value for key (an undefined one,
// NaN, is none).
func (m *Metrics) Has(key metrics.Key) bool {
	for _, r := range m.Rows {
		if v, ok := r[key]; ok && !math.IsNaN(v) {
			return true
		}
	}
	return false
}

// Series returns the steps that have a finite value for key, and the values.
func (m *Metrics) Series(key metrics.Key) (steps, values []float64) {
	for i, r := range m.Rows {
		if v, ok := r[key]; ok && !math.IsNaN(v) {
			steps = append(steps, float64(m.Steps[i]))
			values = append(values, v)
		}
	}
	return steps, values
}

// SeriesGaps is Series with the steps whose value for key is undefined
// (NaN: the rounds to agreement of a step without agreement) kept, as NaN,
// so that a chart leaves a gap there; ok is false when no value is
// defined.
func (m *Metrics) SeriesGaps(key metrics.Key) (steps, values []float64, ok bool) {
	for i, r := range m.Rows {
		if v, has := r[key]; has {
			steps = append(steps, float64(m.Steps[i]))
			values = append(values, v)
			ok = ok || !math.IsNaN(v)
		}
	}
	return steps, values, ok
}

// Keys returns every key that has a value at some step, sorted.
func (m *Metrics) Keys() []metrics.Key {
	seen := map[metrics.Key]bool{}
	for _, r := range m.Rows {
		for k := range r {
			seen[k] = true
		}
	}
	keys := make([]metrics.Key, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
