package games

import (
	"bufio"
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
	Name string `json:"name"`
	// Pairwise marks an `eval pairwise --details` file: Left and Right
	// name its sides, and a prompt's comparisons are keyed by decoding
	// and run instead of by step.
	Pairwise bool       `json:"pairwise"`
	Left     string     `json:"left,omitempty"`
	Right    string     `json:"right,omitempty"`
	Steps    []EvalStep `json:"steps"`
	Prompts  []string   `json:"prompts"`
	Errors   []string   `json:"errors"`
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
		r, ok := readJSON[harness.EvalResult](path, &errs)
		if !ok {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, errs, nil
}

// ReadCompare reads the run's evaluations' headlines and prompts.
func ReadCompare(dir string) (*CompareOut, error) {
	if isFile(dir) {
		return readPairwise(dir)
	}
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
	if isFile(dir) {
		return readPairwisePrompt(dir, prompt)
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

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// isPairwiseDetails reports whether path is an `eval pairwise --details`
// file: JSON lines of harness.Comparison (its first line has a prompt id
// and both sides' finals).
func isPairwiseDetails(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	if !sc.Scan() {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(sc.Bytes(), &m) != nil {
		return false
	}
	_, l := m["left_final"]
	_, r := m["right_final"]
	_, p := m["prompt_id"]
	return l && r && p
}

// readDetails reads a details file's comparisons; a line that does not
// parse is named in errs and skipped.
func readDetails(path string) ([]harness.Comparison, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("games: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []harness.Comparison
	var errs []string
	for n := 1; sc.Scan(); n++ {
		var c harness.Comparison
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			errs = append(errs, fmt.Sprintf("%s:%d: skipped, does not parse: %v", path, n, err))
			continue
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Sprintf("%s: %v", path, err))
	}
	return out, errs, nil
}

// sideNames are the sides' names from a results file (`--out`, a JSON
// array of harness.PairwiseCell) beside the details file, or "left" and
// "right".
func sideNames(details string) (string, string) {
	paths, _ := filepath.Glob(filepath.Join(filepath.Dir(details), "*.json"))
	sub, _ := filepath.Glob(filepath.Join(filepath.Dir(details), "*", "*.json"))
	for _, p := range append(paths, sub...) {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var cells []harness.PairwiseCell
		if json.Unmarshal(b, &cells) == nil && len(cells) > 0 && cells[0].Left != "" {
			return cells[0].Left, cells[0].Right
		}
	}
	return "left", "right"
}

func readPairwise(path string) (*CompareOut, error) {
	cs, errs, err := readDetails(path)
	if err != nil {
		return nil, err
	}
	out := &CompareOut{Name: filepath.Base(path), Pairwise: true, Steps: []EvalStep{}, Prompts: []string{}, Errors: append([]string{}, errs...)}
	out.Left, out.Right = sideNames(path)
	seen := map[string]bool{}
	for _, c := range cs {
		if !seen[c.PromptID] {
			seen[c.PromptID] = true
			out.Prompts = append(out.Prompts, c.PromptID)
		}
	}
	sort.Strings(out.Prompts)
	return out, nil
}

// pairwiseKey keys a details comparison by its decoding and run.
func pairwiseKey(c harness.Comparison) string {
	return fmt.Sprintf("%s, run %d", c.Decoding, c.Run+1)
}

func readPairwisePrompt(path, prompt string) (*ComparePrompt, error) {
	cs, errs, err := readDetails(path)
	if err != nil {
		return nil, err
	}
	out := &ComparePrompt{Prompt: prompt, Steps: map[string][]harness.Comparison{}, Errors: append([]string{}, errs...)}
	for _, c := range cs {
		if c.PromptID == prompt {
			out.Steps[pairwiseKey(c)] = append(out.Steps[pairwiseKey(c)], c)
		}
	}
	if len(out.Steps) == 0 {
		return nil, fmt.Errorf("%w: %s compared no prompt %q", errBadRequest, path, prompt)
	}
	return out, nil
}
