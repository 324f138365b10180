package report

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/stats"
)

// Result kinds, the optional "kind" field of an evaluation result. Without
// it the kind is told from the keys: "benchmark" for a bench result, "left"
// and "right" for a pairwise one, "exact" and "within_one" for agreement.
const (
	KindPairwise  = "pairwise"
	KindBench     = "bench"
	KindAgreement = "agreement"
)

// Judge aspects of pairwise comparisons (seed 000 tables 2 and 3).
const (
	AspectCA                 = "ca"
	AspectConflictResolution = "conflict_resolution"
)

// Decodings of pairwise comparisons.
const (
	DecodingGreedy   = "greedy"
	DecodingSampling = "sampling"
)

// PairwiseRun is one run of a pairwise comparison: the left model's win rate
// in percent (a tie counts half) and the counts behind it, and the average
// rounds of negotiation of each side (absent for a side that does not
// negotiate, such as a single-agent model).
type PairwiseRun struct {
	WinRate     float64  `json:"win_rate"`
	Wins        int      `json:"wins"`
	Ties        int      `json:"ties"`
	Losses      int      `json:"losses"`
	RoundsLeft  *float64 `json:"rounds_left,omitempty"`
	RoundsRight *float64 `json:"rounds_right,omitempty"`
}

// NewPairwiseRun makes a run from counted outcomes and the sides' average
// rounds (nil where not applicable).
func NewPairwiseRun(w stats.WinRateResult, roundsLeft, roundsRight *float64) PairwiseRun {
	return PairwiseRun{WinRate: w.Percent, Wins: w.Wins, Ties: w.Ties, Losses: w.Losses, RoundsLeft: roundsLeft, RoundsRight: roundsRight}
}

// PairwiseResult is a left model compared with a right model on one eval set,
// judged for one aspect under one decoding, over runs: one cell of seed 000
// table 2 or 3. Mean and SD (sample SD, ddof 1) are over the runs' win rates,
// in percent.
type PairwiseResult struct {
	Kind     string        `json:"kind,omitempty"`
	Left     string        `json:"left"`
	Right    string        `json:"right"`
	Set      string        `json:"set"`
	Aspect   string        `json:"aspect"`   // AspectCA, AspectConflictResolution, …
	Decoding string        `json:"decoding"` // DecodingGreedy or DecodingSampling
	Runs     []PairwiseRun `json:"runs"`
	Mean     float64       `json:"mean"`
	SD       float64       `json:"sd"`
}

// NewPairwiseResult makes a result of runs, computing Mean and SD.
func NewPairwiseResult(left, right, set, aspect, decoding string, runs []PairwiseRun) PairwiseResult {
	r := PairwiseResult{Kind: KindPairwise, Left: left, Right: right, Set: set, Aspect: aspect, Decoding: decoding, Runs: runs}
	r.summarize()
	return r
}

func (r *PairwiseResult) summarize() {
	if len(r.Runs) == 0 {
		return
	}
	xs := make([]float64, len(r.Runs))
	for i, run := range r.Runs {
		xs[i] = run.WinRate
	}
	r.Mean, r.SD = stats.MeanSD(xs)
}

// rounds returns the mean over runs of each side's rounds, nil when no run
// has them.
func (r PairwiseResult) rounds() (left, right *float64) {
	var ls, rs []float64
	for _, run := range r.Runs {
		if run.RoundsLeft != nil {
			ls = append(ls, *run.RoundsLeft)
		}
		if run.RoundsRight != nil {
			rs = append(rs, *run.RoundsRight)
		}
	}
	if len(ls) > 0 {
		m, _ := stats.MeanSD(ls)
		left = &m
	}
	if len(rs) > 0 {
		m, _ := stats.MeanSD(rs)
		right = &m
	}
	return left, right
}

// BenchRun is one run of a benchmark: accuracy in percent, and the counts
// behind it when known. In JSON a run may also be a bare number (the
// accuracy).
type BenchRun struct {
	Run      int     `json:"run"`
	N        int     `json:"n,omitempty"`
	Correct  int     `json:"correct,omitempty"`
	Accuracy float64 `json:"accuracy"`
}

// UnmarshalJSON reads a run object or a bare accuracy.
func (b *BenchRun) UnmarshalJSON(data []byte) error {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		var acc float64
		if err := json.Unmarshal(t, &acc); err != nil {
			return fmt.Errorf("report.BenchRun: %w", err)
		}
		*b = BenchRun{Accuracy: acc}
		return nil
	}
	type plain BenchRun
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("report.BenchRun: %w", err)
	}
	*b = BenchRun(p)
	return nil
}

// BenchResult is one model's accuracy on one benchmark over runs: one cell
// of seed 000 table 4. Model is "base" or the adapter's name; Scorer how
// answers were read (eval/bench's scorer names: "parley", "lm-eval-strict",
// …; empty for IFEval and for results written before scorers were named).
// Mean and SD (sample SD, ddof 1) are over the runs' accuracies, in percent.
// CutOff counts the responses, over all runs, that end inside their
// thinking block. The JSON that eval/bench writes (bench.Result) reads as
// a BenchResult.
type BenchResult struct {
	Kind      string     `json:"kind,omitempty"`
	Benchmark string     `json:"benchmark"`
	Model     string     `json:"model"`
	Scorer    string     `json:"scorer,omitempty"`
	N         int        `json:"n,omitempty"` // items per run
	Runs      []BenchRun `json:"runs"`
	Mean      float64    `json:"mean"`
	SD        float64    `json:"sd"`
	CutOff    int        `json:"cut_off,omitempty"`
}

// NewBenchResult makes a result of per-run accuracies, computing Mean and SD.
func NewBenchResult(benchmark, model string, n int, accuracies []float64) BenchResult {
	r := BenchResult{Kind: KindBench, Benchmark: benchmark, Model: model, N: n}
	for i, a := range accuracies {
		r.Runs = append(r.Runs, BenchRun{Run: i, N: n, Accuracy: a})
	}
	r.summarize()
	return r
}

func (r *BenchResult) summarize() {
	if len(r.Runs) == 0 {
		return
	}
	xs := make([]float64, len(r.Runs))
	for i, run := range r.Runs {
		xs[i] = run.Accuracy
	}
	r.Mean, r.SD = stats.MeanSD(xs)
}

// AgreementResult is the agreement of two raters (judges, or one judge's two
// runs) over the same items: one column of seed 000 table 7. Label names the
// pair ("4o-mini vs. 5.2, run 1").
type AgreementResult struct {
	Kind  string `json:"kind,omitempty"`
	Label string `json:"label"`
	stats.Agreement
}

// EvalResults is what a set of evaluation files holds, by kind, in file
// order.
type EvalResults struct {
	Pairwise  []PairwiseResult
	Bench     []BenchResult
	Agreement []AgreementResult
}

// ReadEvalFiles reads evaluation result files. A file holds one JSON object,
// a JSON array of objects, or one object per line (JSONL); each object is a
// PairwiseResult, BenchResult or AgreementResult, told apart by "kind" or by
// its keys. Unknown fields are ignored. Mean and SD are recomputed from the
// runs whenever there are runs. Errors name the file and the object.
func ReadEvalFiles(paths []string) (*EvalResults, error) {
	out := &EvalResults{}
	for _, p := range paths {
		if err := out.readFile(p); err != nil {
			return nil, fmt.Errorf("report.ReadEvalFiles: %w", err)
		}
	}
	return out, nil
}

func (e *EvalResults) readFile(path string) error {
	b, err := textfile.ReadFile(path)
	if err != nil {
		return err
	}
	objs, err := splitObjects(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(objs) == 0 {
		return fmt.Errorf("%s: no results", path)
	}
	for i, raw := range objs {
		if err := e.add(raw); err != nil {
			return fmt.Errorf("%s object %d: %w", path, i+1, err)
		}
	}
	return nil
}

// splitObjects returns the objects of a JSON object, array or JSONL text.
func splitObjects(b []byte) ([]json.RawMessage, error) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var arr []json.RawMessage
		if err := json.Unmarshal(t, &arr); err != nil {
			return nil, err
		}
		return arr, nil
	}
	var out []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(t))
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

func (e *EvalResults) add(raw json.RawMessage) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return err
	}
	kind := ""
	if k, ok := keys["kind"]; ok {
		if err := json.Unmarshal(k, &kind); err != nil {
			return fmt.Errorf("kind: %w", err)
		}
	} else {
		_, bench := keys["benchmark"]
		_, left := keys["left"]
		_, right := keys["right"]
		_, exact := keys["exact"]
		_, within := keys["within_one"]
		switch {
		case bench:
			kind = KindBench
		case left && right:
			kind = KindPairwise
		case exact && within:
			kind = KindAgreement
		}
	}
	switch kind {
	case KindPairwise:
		var r PairwiseResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.Left == "" || r.Right == "" || r.Aspect == "" {
			return fmt.Errorf("pairwise result needs left, right and aspect")
		}
		if r.Decoding != DecodingGreedy && r.Decoding != DecodingSampling {
			return fmt.Errorf("pairwise decoding %q, want %q or %q", r.Decoding, DecodingGreedy, DecodingSampling)
		}
		r.Kind = KindPairwise
		r.summarize()
		e.Pairwise = append(e.Pairwise, r)
	case KindBench:
		var r BenchResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.Benchmark == "" {
			return fmt.Errorf("bench result needs a benchmark")
		}
		r.Kind = KindBench
		r.summarize()
		e.Bench = append(e.Bench, r)
	case KindAgreement:
		var r AgreementResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		r.Kind = KindAgreement
		e.Agreement = append(e.Agreement, r)
	case "":
		return fmt.Errorf("cannot tell the kind of result: no \"kind\", and not the keys of a pairwise, bench or agreement result")
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	return nil
}

// WriteJSON writes v (a result, or a slice of them) as indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("report.WriteJSON: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report.WriteJSON: %w", err)
	}
	return nil
}
