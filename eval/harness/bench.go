package harness

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/ifeval"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/stats"
)

// IFEval result names. The benchmark's headline number, under IFEval, is
// the prompt-level strict accuracy; the other three accuracies of the
// reference's report are written beside it.
const (
	IFEval                  = "ifeval"
	IFEvalInstructionStrict = "ifeval_instruction_strict"
	IFEvalPromptLoose       = "ifeval_prompt_loose"
	IFEvalInstructionLoose  = "ifeval_instruction_loose"
)

// BenchmarkName maps a command-line benchmark (ifeval, gpqa, aime24,
// aime25) to its name in results (IFEval, bench.GPQADiamond,
// bench.AIME2024, bench.AIME2025). Result names are accepted as well.
func BenchmarkName(arg string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(arg)) {
	case "ifeval":
		return IFEval, nil
	case "gpqa", bench.GPQADiamond:
		return bench.GPQADiamond, nil
	case "aime24", "aime2024", "aime_2024":
		return bench.AIME2024, nil
	case "aime25", "aime2025", "aime_2025":
		return bench.AIME2025, nil
	}
	return "", fmt.Errorf("harness.BenchmarkName: unknown benchmark %q (want ifeval, gpqa, aime24 or aime25)", arg)
}

// Suite is one benchmark's data, ready to ask and to score.
type Suite struct {
	// Name is the benchmark's name in results.
	Name string
	// Seed is the GPQA choice-shuffle seed (unused by the others).
	Seed int64
	// Scoring chooses GPQA's and AIME's scorer (bench.Scorers); IFEval has
	// one, the reference's.
	Scoring bench.ScoreOptions

	gpqa   []bench.GPQAItem
	aime   []bench.AIMEItem
	ifeval []ifeval.Input
	keys   map[string]int // IFEval: item id (the key) → index in ifeval
}

// LoadSuite reads a benchmark's data file: the user's local copy (GPQA is
// never committed). name is as BenchmarkName returns; seed shuffles GPQA's
// choices and must be the same when scoring offline.
func LoadSuite(name, dataPath string, seed int64) (*Suite, error) {
	s := &Suite{Name: name, Seed: seed}
	var err error
	switch name {
	case bench.GPQADiamond:
		s.gpqa, err = bench.LoadGPQA(dataPath)
	case bench.AIME2024, bench.AIME2025:
		s.aime, err = bench.LoadAIME(dataPath)
	case IFEval:
		s.ifeval, err = ifeval.LoadInputs(dataPath)
		if err == nil {
			s.keys = make(map[string]int, len(s.ifeval))
			for i, in := range s.ifeval {
				id := strconv.Itoa(in.Key)
				if _, dup := s.keys[id]; dup {
					return nil, fmt.Errorf("harness.LoadSuite: %s: duplicate key %d", dataPath, in.Key)
				}
				s.keys[id] = i
			}
		}
	default:
		return nil, fmt.Errorf("harness.LoadSuite: unknown benchmark %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("harness.LoadSuite: %w", err)
	}
	if s.Len() == 0 {
		return nil, fmt.Errorf("harness.LoadSuite: %s has no items", dataPath)
	}
	return s, nil
}

// Len is the number of items.
func (s *Suite) Len() int { return len(s.gpqa) + len(s.aime) + len(s.ifeval) }

// Questions returns the questions of run (0-based), in item order. IFEval
// items are identified by their key.
func (s *Suite) Questions(run int) []bench.Question {
	switch s.Name {
	case bench.GPQADiamond:
		return bench.GPQAQuestions(s.gpqa, s.Seed, run)
	case IFEval:
		out := make([]bench.Question, len(s.ifeval))
		for i, in := range s.ifeval {
			out[i] = bench.Question{ID: strconv.Itoa(in.Key), Run: run, Prompt: in.Prompt}
		}
		return out
	}
	return bench.AIMEQuestions(s.aime, run)
}

// Scored is a model's score on a suite.
type Scored struct {
	// Results are what eval/report reads: one for GPQA and AIME, four for
	// IFEval (IFEval, IFEvalInstructionStrict, IFEvalPromptLoose,
	// IFEvalInstructionLoose).
	Results []report.BenchResult
	// Detail is the per-item scoring: a bench.Result (GPQA, AIME) or the
	// ifeval.Report of each run ([]IFEvalRun).
	Detail any
}

// IFEvalRun is one run's IFEval report.
type IFEvalRun struct {
	Run    int           `json:"run"`
	Report ifeval.Report `json:"report"`
}

// Score scores model's responses. Every item counts in every run that has
// at least one response: an item without a response, or whose response
// has no answer after its thinking block, is wrong (for IFEval, scored as
// an empty response, which follows no instruction).
func (s *Suite) Score(ctx context.Context, model string, responses []bench.Response) (Scored, error) {
	switch s.Name {
	case bench.GPQADiamond, bench.AIME2024, bench.AIME2025:
		var r bench.Result
		var err error
		if s.Name == bench.GPQADiamond {
			r, err = bench.ScoreGPQA(s.gpqa, responses, s.Seed, s.Scoring)
		} else {
			r, err = bench.ScoreAIME(ctx, s.Name, s.aime, responses, s.Scoring)
		}
		if err != nil {
			return Scored{}, fmt.Errorf("harness.Suite.Score: %w", err)
		}
		r.Model = model
		br := report.BenchResult{Kind: report.KindBench, Benchmark: r.Benchmark, Model: model, Scorer: r.Scorer, N: r.N, Mean: r.Mean, SD: r.SD}
		for _, rs := range r.Runs {
			br.Runs = append(br.Runs, report.BenchRun{Run: rs.Run, N: rs.N, Correct: rs.Correct, Accuracy: rs.Accuracy})
			br.CutOff += rs.CutOff
		}
		return Scored{Results: []report.BenchResult{br}, Detail: r}, nil
	case IFEval:
		if s.Scoring.Scorer != "" && s.Scoring.Scorer != bench.ScorerParley {
			return Scored{}, fmt.Errorf("harness.Suite.Score: %s has one scorer (the reference's checks, ported): no scorer %q", IFEval, s.Scoring.Scorer)
		}
		return s.scoreIFEval(model, responses)
	}
	return Scored{}, fmt.Errorf("harness.Suite.Score: unknown benchmark %q", s.Name)
}

func (s *Suite) scoreIFEval(model string, responses []bench.Response) (Scored, error) {
	if len(responses) == 0 {
		return Scored{}, fmt.Errorf("harness.Suite.Score: %s: no responses", IFEval)
	}
	byRun := map[int]map[string]string{}
	for i, r := range responses {
		if _, ok := s.keys[r.ID]; !ok {
			return Scored{}, fmt.Errorf("harness.Suite.Score: %s: response %d: unknown key %q", IFEval, i+1, r.ID)
		}
		m := byRun[r.Run]
		if m == nil {
			m = map[string]string{}
			byRun[r.Run] = m
		}
		if _, dup := m[r.ID]; dup {
			return Scored{}, fmt.Errorf("harness.Suite.Score: %s: response %d: second response to key %s in run %d", IFEval, i+1, r.ID, r.Run)
		}
		m[r.ID] = r.Response
	}
	runs := make([]int, 0, len(byRun))
	for run := range byRun {
		runs = append(runs, run)
	}
	slices.Sort(runs)
	names := []string{IFEval, IFEvalInstructionStrict, IFEvalPromptLoose, IFEvalInstructionLoose}
	results := make([]report.BenchResult, len(names))
	for i, n := range names {
		results[i] = report.BenchResult{Kind: report.KindBench, Benchmark: n, Model: model}
	}
	var detail []IFEvalRun
	for _, run := range runs {
		// Each input gets its own response, matched by key; the reference
		// matches by prompt text, so inputs are renamed to their key.
		inputs := make([]ifeval.Input, len(s.ifeval))
		resps := make([]ifeval.Response, len(s.ifeval))
		for i, in := range s.ifeval {
			id := strconv.Itoa(in.Key)
			in.Prompt = id
			inputs[i] = in
			resps[i] = ifeval.Response{Prompt: id, Response: IFEvalResponse(byRun[run][id])}
		}
		rep, err := ifeval.Evaluate(inputs, resps)
		if err != nil {
			return Scored{}, fmt.Errorf("harness.Suite.Score: %s run %d: %w", IFEval, run, err)
		}
		for i := range rep.Prompts { // restore the prompt text in the detail
			rep.Prompts[i].Prompt = s.ifeval[i].Prompt
		}
		detail = append(detail, IFEvalRun{Run: run, Report: rep})
		tallies := []ifeval.Tally{rep.Strict.Prompt, rep.Strict.Instruction, rep.Loose.Prompt, rep.Loose.Instruction}
		for i, t := range tallies {
			results[i].N = t.Total
			results[i].Runs = append(results[i].Runs, report.BenchRun{Run: run, N: t.Total, Correct: t.Followed, Accuracy: 100 * t.Accuracy()})
		}
	}
	for i := range results {
		accs := make([]float64, len(results[i].Runs))
		for k, r := range results[i].Runs {
			accs[k] = r.Accuracy
		}
		results[i].Mean, results[i].SD = stats.MeanSD(accs)
	}
	return Scored{Results: results, Detail: detail}, nil
}

// IFEvalResponse is the text IFEval scores of a response: the response
// exactly as generated, as the reference scores it (trimming it would
// change which lines loose mode drops and where paragraphs start), less a
// thinking block and the white space the chat template puts between the
// block and the answer ("</think>\n\n"). A response cut off while
// thinking scores as an empty response.
func IFEvalResponse(response string) string {
	if !strings.Contains(response, "<think>") && !strings.Contains(response, "</think>") {
		return response
	}
	return strings.TrimLeftFunc(bench.StripThinking(response), unicode.IsSpace)
}

// ReadResponses reads a responses file for the suite: the JSONL that
// WriteGenerations and bench.WriteResponses write ({id, run, response}).
// For IFEval the reference's format ({prompt, response} a line, one run)
// is accepted too: responses are matched to inputs by prompt text and
// count as run 0. Every run in the file must answer every item of the
// suite (see CheckComplete).
func (s *Suite) ReadResponses(path string) ([]bench.Response, error) {
	rs, err := s.readResponses(path)
	if err != nil {
		return nil, fmt.Errorf("harness.Suite.ReadResponses: %w", err)
	}
	if err := s.CheckComplete(path, rs); err != nil {
		return nil, fmt.Errorf("harness.Suite.ReadResponses: %w", err)
	}
	return rs, nil
}

// CheckComplete checks that every run of rs (the responses read from
// path) has a response to every item of the suite: a responses file that
// misses items would score them as wrong (or, for IFEval, as empty
// responses) without a word. The error names the run and the first
// missing item ids.
func (s *Suite) CheckComplete(path string, rs []bench.Response) error {
	have := map[int]map[string]bool{}
	var runs []int
	for _, r := range rs {
		if have[r.Run] == nil {
			have[r.Run] = map[string]bool{}
			runs = append(runs, r.Run)
		}
		have[r.Run][r.ID] = true
	}
	slices.Sort(runs)
	ids := s.ids()
	for _, run := range runs {
		var missing []string
		for _, id := range ids {
			if !have[run][id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			continue
		}
		shown := missing
		if len(shown) > 5 {
			shown = append(slices.Clone(shown[:5]), "…")
		}
		return fmt.Errorf("%s: run %d answers %d of the %d items of the data file: no response to %d (ids %s); score a complete file, or score against a data file of the items it answers",
			path, run, len(ids)-len(missing), len(ids), len(missing), strings.Join(shown, ", "))
	}
	return nil
}

// ids are the item ids, in data file order.
func (s *Suite) ids() []string {
	var out []string
	for _, q := range s.Questions(0) {
		out = append(out, q.ID)
	}
	return out
}

func (s *Suite) readResponses(path string) ([]bench.Response, error) {
	rs, err := bench.ReadResponses(path)
	if err == nil || s.Name != IFEval {
		return rs, err
	}
	ref, rerr := ifeval.LoadResponses(path)
	if rerr != nil {
		return nil, err
	}
	byPrompt := make(map[string]string, len(s.ifeval))
	for _, in := range s.ifeval {
		byPrompt[in.Prompt] = strconv.Itoa(in.Key)
	}
	seen := map[string]int{}
	for _, r := range ref {
		id, ok := byPrompt[r.Prompt]
		if !ok {
			return nil, fmt.Errorf("%s: a response's prompt is not an input's: %.60q", path, r.Prompt)
		}
		if k, dup := seen[id]; dup { // the reference keeps the last response to a prompt
			rs[k].Response = r.Response
			continue
		}
		seen[id] = len(rs)
		rs = append(rs, bench.Response{ID: id, Run: 0, Response: r.Response})
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no responses", path)
	}
	return rs, nil
}
