package games

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/internal/fsutil"
)

// CompareOut lists a run's held-out evaluations during training
// (train.eval_every: RUN/evals/step-N.json), each step's adapter judged
// pairwise against the base in both orders, and the prompts they share.
type CompareOut struct {
	Name    string     `json:"name"`
	Steps   []EvalStep `json:"steps"`
	Prompts []string   `json:"prompts"`
	Errors  []string   `json:"errors"`
}

// EvalStep is one evaluation's headline.
type EvalStep struct {
	Step    int      `json:"step"`
	Adapter string   `json:"adapter"`
	Base    string   `json:"base"`
	Set     string   `json:"set"`
	Judge   string   `json:"judge"`
	WinRate *float64 `json:"win_rate"`
	Prompts int      `json:"prompts"`
}

// ComparePrompt is one held-out prompt under every evaluated checkpoint:
// per step, its comparisons (per aspect and run) with the completions of
// both sides and the verdicts of both orders.
type ComparePrompt struct {
	Prompt string                          `json:"prompt"`
	Steps  map[string][]harness.Comparison `json:"steps"`
	Errors []string                        `json:"errors"`
}

// readEvals reads every evals/step-N.json of the run in dir, in step
// order; a file that does not parse is named in errs and skipped.
func readEvals(dir string) ([]harness.EvalResult, []string, error) {
	ed := dataset.RunDir(dir).EvalsDir()
	entries, err := os.ReadDir(ed)
	if err != nil {
		return nil, nil, fmt.Errorf("games: %s holds no held-out evaluations (looked for %s/step-N.json): %w", dir, ed, err)
	}
	var out []harness.EvalResult
	var errs []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || fsutil.IsTemp(e.Name()) {
			continue
		}
		if _, ok := dataset.ParseStepName(name); !ok {
			continue
		}
		path := filepath.Join(ed, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		var r harness.EvalResult
		if err := json.Unmarshal(b, &r); err != nil {
			errs = append(errs, fmt.Sprintf("%s: skipped, does not parse: %v", path, err))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, errs, nil
}

// ReadCompare reads the run's evaluations' headlines and prompts.
func ReadCompare(dir string) (*CompareOut, error) {
	evs, errs, err := readEvals(dir)
	if err != nil {
		return nil, err
	}
	out := &CompareOut{Name: filepath.Base(filepath.Clean(dir)), Steps: []EvalStep{}, Prompts: []string{}, Errors: append([]string{}, errs...)}
	seen := map[string]bool{}
	for _, r := range evs {
		s := EvalStep{Step: r.Step, Adapter: r.Adapter, Base: r.Base, Set: r.Set, Judge: r.Judge, Prompts: r.Prompts}
		if len(r.Result.Runs) > 0 {
			w := r.Result.Runs[0].WinRate
			s.WinRate = &w
		}
		out.Steps = append(out.Steps, s)
		for _, c := range r.Comparisons {
			if !seen[c.PromptID] {
				seen[c.PromptID] = true
				out.Prompts = append(out.Prompts, c.PromptID)
			}
		}
	}
	sort.Strings(out.Prompts)
	return out, nil
}

// ReadComparePrompt reads prompt's comparisons at every evaluated step,
// keyed by the step (as a decimal string).
func ReadComparePrompt(dir, prompt string) (*ComparePrompt, error) {
	if prompt == "" {
		return nil, fmt.Errorf("%w: prompt (a held-out prompt's id) is required", errBadRequest)
	}
	evs, errs, err := readEvals(dir)
	if err != nil {
		return nil, err
	}
	out := &ComparePrompt{Prompt: prompt, Steps: map[string][]harness.Comparison{}, Errors: append([]string{}, errs...)}
	for _, r := range evs {
		for _, c := range r.Comparisons {
			if c.PromptID == prompt {
				k := fmt.Sprint(r.Step)
				out.Steps[k] = append(out.Steps[k], c)
			}
		}
	}
	if len(out.Steps) == 0 {
		return nil, fmt.Errorf("%w: no evaluation of %s compared prompt %q", errBadRequest, dir, prompt)
	}
	return out, nil
}
