package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parleyhq/parley/stats"
)

// ItemScore is the verdict on one item in one run.
type ItemScore struct {
	ID       string `json:"id"`
	Run      int    `json:"run"`
	Expected string `json:"expected"`
	Got      string `json:"got"` // the extracted answer; "" when none was found
	Correct  bool   `json:"correct"`
	Missing  bool   `json:"missing,omitempty"` // no response for this item in this run
	CutOff   bool   `json:"cut_off,omitempty"` // the response ends inside its thinking block (see CutOff)
}

// RunScore is one run's accuracy. Every item counts in N: an item without a
// response (Missing) or without an extractable answer (Unanswered) is wrong.
// CutOff counts the responses that end inside their thinking block: no
// answer under ScorerParley, read whole by the reference scorers.
type RunScore struct {
	Run        int     `json:"run"`
	N          int     `json:"n"`
	Correct    int     `json:"correct"`
	Unanswered int     `json:"unanswered"`
	Missing    int     `json:"missing"`
	CutOff     int     `json:"cut_off"`
	Accuracy   float64 `json:"accuracy"` // percent: 100 × Correct / N
}

// Result is a benchmark's score over runs: accuracy per run, and their mean
// and sample SD (ddof 1; SD 0 for a single run) in percent. Model is left
// empty by the scorers for the caller to name ("base" or the adapter);
// Scorer names how answers were read (see Scorers). Its JSON form is the
// bench result file the report reads.
type Result struct {
	Benchmark string      `json:"benchmark"`
	Model     string      `json:"model,omitempty"`
	Scorer    string      `json:"scorer"`
	N         int         `json:"n"` // items per run
	Seed      *int64      `json:"seed,omitempty"`
	Runs      []RunScore  `json:"runs"`
	Mean      float64     `json:"mean"`
	SD        float64     `json:"sd"`
	Items     []ItemScore `json:"items,omitempty"`
}

// ScoreOptions choose how answers are read from responses.
type ScoreOptions struct {
	// Scorer is ScorerParley (when empty) or a reference scorer of the
	// benchmark (see Scorers).
	Scorer string
	// MathVerify runs math-verify for ScorerMathVerify.
	MathVerify MathVerifier
}

// ScoreGPQA scores responses to GPQA questions shuffled with seed (the seed
// the questions were made with: see GPQAQuestions). Under ScorerParley the
// answer is the last answer statement after any thinking block
// (StripThinking, ExtractChoice), right when it is the shuffled correct
// letter; a reference scorer reads ReferenceText with its own rule
// (LMEvalStrict, LMEvalFlexible with LMEvalExactMatch, SimpleEvalsChoice).
// It fails on an unknown scorer, a response to an unknown item, two
// responses to one item in one run, a response whose Expected disagrees
// with the shuffle, or no responses at all.
func ScoreGPQA(items []GPQAItem, responses []Response, seed int64, o ScoreOptions) (Result, error) {
	scorer, err := CheckScorer(GPQADiamond, o.Scorer)
	if err != nil {
		return Result{}, fmt.Errorf("bench.ScoreGPQA: %w", err)
	}
	expected := make(map[string]func(run int) string, len(items))
	byID := make(map[string]GPQAItem, len(items))
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
		byID[it.ID] = it
		expected[it.ID] = func(run int) string { return ShuffleGPQA(it, seed, run).Correct }
	}
	read := func(in judgeInput) verdict {
		text := ReferenceText(in.response)
		switch scorer {
		case ScorerLMEvalStrict:
			return lmEvalVerdict(LMEvalStrict(text), in.want)
		case ScorerLMEvalFlexible:
			q := ShuffleGPQA(byID[in.id], seed, in.run)
			return lmEvalVerdict(LMEvalFlexible(text, LMEvalChoices(q.Choices)), in.want)
		case ScorerSimpleEvals:
			got, _ := SimpleEvalsChoice(text)
			return verdict{got, got == in.want}
		}
		got, _ := ExtractChoice(StripThinking(in.response))
		return verdict{got, got != "" && got == in.want}
	}
	r, err := score(GPQADiamond, ids, expected, eachJudge(read), responses)
	if err != nil {
		return Result{}, fmt.Errorf("bench.ScoreGPQA: %w", err)
	}
	r.Seed, r.Scorer = &seed, scorer
	return r, nil
}

// lmEvalVerdict is the verdict on a filtered response: got is what the
// filter returned ("" for its fallback), right by LMEvalExactMatch.
func lmEvalVerdict(filtered, want string) verdict {
	got := filtered
	if got == LMEvalInvalid {
		got = ""
	}
	return verdict{got, LMEvalExactMatch(filtered, want)}
}

// ScoreAIME scores responses to AIME problems under the given benchmark name
// (AIME2024, AIME2025). Under ScorerParley the answer is the last complete
// \boxed{} after any thinking block, right when it reads as the expected
// integer (ExtractAIMEAnswer: "\boxed{033}" is 33; "\boxed{33.5}" is
// wrong); under ScorerMathVerify, math-verify's verdict on ReferenceText
// (o.MathVerify runs it, once for all responses). Failures as for
// ScoreGPQA, and math-verify's.
func ScoreAIME(ctx context.Context, benchmark string, items []AIMEItem, responses []Response, o ScoreOptions) (Result, error) {
	scorer, err := CheckScorer(benchmark, o.Scorer)
	if err != nil {
		return Result{}, fmt.Errorf("bench.ScoreAIME: %w", err)
	}
	expected := make(map[string]func(run int) string, len(items))
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
		want := strconv.FormatInt(it.Answer, 10)
		expected[it.ID] = func(int) string { return want }
	}
	judge := eachJudge(func(in judgeInput) verdict {
		n, text, ok := ExtractAIMEAnswer(StripThinking(in.response))
		if !ok {
			return verdict{text, false}
		}
		got := strconv.FormatInt(n, 10)
		return verdict{got, got == in.want}
	})
	if scorer == ScorerMathVerify {
		if o.MathVerify == nil {
			return Result{}, fmt.Errorf("bench.ScoreAIME: scorer %s: no math-verify runner", scorer)
		}
		judge = func(ins []judgeInput) ([]verdict, error) {
			pairs := make([]MathVerifyPair, len(ins))
			for i, in := range ins {
				pairs[i] = MathVerifyPair{Gold: in.want, Response: ReferenceText(in.response)}
			}
			mv, err := o.MathVerify.Verify(ctx, pairs)
			if err != nil {
				return nil, err
			}
			out := make([]verdict, len(mv))
			for i, v := range mv {
				out[i] = verdict{v.Got, v.Correct}
			}
			return out, nil
		}
	}
	r, err := score(benchmark, ids, expected, judge, responses)
	if err != nil {
		return Result{}, fmt.Errorf("bench.ScoreAIME: %w", err)
	}
	r.Scorer = scorer
	return r, nil
}

type runItem struct {
	run int
	id  string
}

// judgeInput is one response to judge: its item, run, text and the answer
// it should give.
type judgeInput struct {
	id       string
	run      int
	response string
	want     string
}

// verdict is what was read from a response (got, "" when nothing) and
// whether it is right.
type verdict struct {
	got     string
	correct bool
}

// judgeFunc judges every response at once, returning the verdicts in order.
type judgeFunc func([]judgeInput) ([]verdict, error)

// eachJudge makes a judgeFunc of a function of one response.
func eachJudge(f func(judgeInput) verdict) judgeFunc {
	return func(ins []judgeInput) ([]verdict, error) {
		out := make([]verdict, len(ins))
		for i, in := range ins {
			out[i] = f(in)
		}
		return out, nil
	}
}

func score(benchmark string, ids []string, expected map[string]func(int) string,
	judge judgeFunc, responses []Response) (Result, error) {
	if len(ids) == 0 {
		return Result{}, fmt.Errorf("%s: no items", benchmark)
	}
	if len(responses) == 0 {
		return Result{}, fmt.Errorf("%s: no responses", benchmark)
	}
	byKey := make(map[runItem]Response, len(responses))
	var runs []int
	for i, r := range responses {
		exp, ok := expected[r.ID]
		if !ok {
			return Result{}, fmt.Errorf("%s: response %d: unknown item %q", benchmark, i+1, r.ID)
		}
		k := runItem{r.Run, r.ID}
		if _, dup := byKey[k]; dup {
			return Result{}, fmt.Errorf("%s: response %d: second response to item %q in run %d", benchmark, i+1, r.ID, r.Run)
		}
		if r.Expected != "" && r.Expected != exp(r.Run) {
			return Result{}, fmt.Errorf("%s: response %d: item %q run %d expects %q, the scorer %q (another seed or data file?)",
				benchmark, i+1, r.ID, r.Run, r.Expected, exp(r.Run))
		}
		byKey[k] = r
		if !slices.Contains(runs, r.Run) {
			runs = append(runs, r.Run)
		}
	}
	slices.Sort(runs)
	var ins []judgeInput
	for _, run := range runs {
		for _, id := range ids {
			if resp, ok := byKey[runItem{run, id}]; ok {
				ins = append(ins, judgeInput{id: id, run: run, response: resp.Response, want: expected[id](run)})
			}
		}
	}
	verdicts, err := judge(ins)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", benchmark, err)
	}
	res := Result{Benchmark: benchmark, N: len(ids)}
	accs := make([]float64, 0, len(runs))
	next := 0
	for _, run := range runs {
		rs := RunScore{Run: run, N: len(ids)}
		for _, id := range ids {
			is := ItemScore{ID: id, Run: run, Expected: expected[id](run)}
			if resp, ok := byKey[runItem{run, id}]; ok {
				v := verdicts[next]
				next++
				is.Got, is.Correct = v.got, v.correct
				if is.Got == "" {
					rs.Unanswered++
				}
				if CutOff(resp.Response) {
					is.CutOff = true
					rs.CutOff++
				}
			} else {
				is.Missing = true
				rs.Missing++
			}
			if is.Correct {
				rs.Correct++
			}
			res.Items = append(res.Items, is)
		}
		rs.Accuracy = 100 * float64(rs.Correct) / float64(rs.N)
		accs = append(accs, rs.Accuracy)
		res.Runs = append(res.Runs, rs)
	}
	res.Mean, res.SD = stats.MeanSD(accs)
	return res, nil
}

// ScoreOffline scores a responses file (see ReadResponses) against a data
// file: benchmark GPQADiamond (seed as used for the questions) or an AIME
// name (AIME2024, AIME2025, or any name starting "aime"), with o's scorer.
func ScoreOffline(ctx context.Context, benchmark, dataPath, responsesPath string, seed int64, o ScoreOptions) (Result, error) {
	responses, err := ReadResponses(responsesPath)
	if err != nil {
		return Result{}, fmt.Errorf("bench.ScoreOffline: %w", err)
	}
	var r Result
	switch {
	case benchmark == GPQADiamond || benchmark == "gpqa":
		items, err := LoadGPQA(dataPath)
		if err != nil {
			return Result{}, fmt.Errorf("bench.ScoreOffline: %w", err)
		}
		r, err = ScoreGPQA(items, responses, seed, o)
		if err != nil {
			return Result{}, fmt.Errorf("bench.ScoreOffline: %w", err)
		}
		r.Benchmark = benchmark
	case strings.HasPrefix(strings.ToLower(benchmark), "aime"):
		items, err := LoadAIME(dataPath)
		if err != nil {
			return Result{}, fmt.Errorf("bench.ScoreOffline: %w", err)
		}
		r, err = ScoreAIME(ctx, benchmark, items, responses, o)
		if err != nil {
			return Result{}, fmt.Errorf("bench.ScoreOffline: %w", err)
		}
	default:
		return Result{}, fmt.Errorf("bench.ScoreOffline: unknown benchmark %q (want %q, %q or %q)", benchmark, GPQADiamond, AIME2024, AIME2025)
	}
	return r, nil
}

// Accuracies returns the per-run accuracies in run order.
func (r Result) Accuracies() []float64 {
	out := make([]float64, len(r.Runs))
	for i, rs := range r.Runs {
		out[i] = rs.Accuracy
	}
	return out
}

// WriteJSON writes the result as indented JSON, through a temporary file
// renamed into place. Per-item verdicts are included unless withItems is
// false; they hold IDs and answer letters or numbers, never question text.
func (r Result) WriteJSON(path string, withItems bool) error {
	if !withItems {
		r.Items = nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench.Result.WriteJSON: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench.Result.WriteJSON: %w", err)
	}
	return nil
}

// ReadResult reads a result written by WriteJSON.
func ReadResult(path string) (Result, error) {
	b, err := textfile.ReadFile(path)
	if err != nil {
		return Result{}, fmt.Errorf("bench.ReadResult: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, fmt.Errorf("bench.ReadResult: %s: %w", path, err)
	}
	return r, nil
}
