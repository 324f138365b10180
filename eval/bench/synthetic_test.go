package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/golden"
)

// The synthetic set (scripts/parley_tools/bench_synth.py): 304 responses per
// benchmark with their intended answers, and the reference packages'
// verdicts on them (lm-eval 0.4.13, simple-evals, math-verify 0.9.0).
const (
	synthDir  = "testdata/synthetic"
	synthSeed = 0
)

// synthResponse is a line of a synthetic responses file.
type synthResponse struct {
	Response
	Intended string `json:"intended"`
	Template string `json:"template"`
}

// refVerdict is a reference scorer's verdict in the fixtures.
type refVerdict struct {
	Got     string `json:"got"`
	Correct bool   `json:"correct"`
}

// synthReference is a line of a *-reference.jsonl (or parley-before.jsonl).
type synthReference struct {
	ID  string                `json:"id"`
	Run int                   `json:"run"`
	By  map[string]refVerdict `json:"-"`
}

func readSynthJSONL[T any](t *testing.T, name string) []T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(synthDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		out = append(out, v)
	}
	return out
}

// readReference reads a verdicts file: {id, run, SCORER: {got, correct}, …}
// a line, in the responses' order.
func readReference(t *testing.T, name string, responses []synthResponse) []synthReference {
	t.Helper()
	raw := readSynthJSONL[map[string]json.RawMessage](t, name)
	if len(raw) != len(responses) {
		t.Fatalf("%s: %d lines for %d responses", name, len(raw), len(responses))
	}
	out := make([]synthReference, len(raw))
	for i, m := range raw {
		r := synthReference{By: map[string]refVerdict{}}
		for k, v := range m {
			var err error
			switch k {
			case "id":
				err = json.Unmarshal(v, &r.ID)
			case "run":
				err = json.Unmarshal(v, &r.Run)
			default:
				var rv refVerdict
				err = json.Unmarshal(v, &rv)
				r.By[k] = rv
			}
			if err != nil {
				t.Fatalf("%s line %d: %s: %v", name, i+1, k, err)
			}
		}
		if r.ID != responses[i].ID || r.Run != responses[i].Run {
			t.Fatalf("%s line %d: %s run %d, the responses' %s run %d", name, i+1, r.ID, r.Run, responses[i].ID, responses[i].Run)
		}
		out[i] = r
	}
	return out
}

type synthGPQA struct {
	items     []GPQAItem
	byID      map[string]GPQAItem
	responses []synthResponse
	ref       []synthReference
}

func loadSynthGPQA(t *testing.T) synthGPQA {
	t.Helper()
	items, err := LoadGPQA(filepath.Join(synthDir, "gpqa.csv"))
	if err != nil {
		t.Fatal(err)
	}
	s := synthGPQA{items: items, byID: map[string]GPQAItem{}, responses: readSynthJSONL[synthResponse](t, "gpqa-responses.jsonl")}
	for _, it := range items {
		s.byID[it.ID] = it
	}
	if len(s.responses) != 304 {
		t.Fatalf("gpqa-responses.jsonl: %d responses, want 304", len(s.responses))
	}
	s.ref = readReference(t, "gpqa-reference.jsonl", s.responses)
	return s
}

func plain(rs []synthResponse) []Response {
	out := make([]Response, len(rs))
	for i, r := range rs {
		out[i] = r.Response
	}
	return out
}

// verdicts scores the responses and returns the verdict on each, in the
// responses' order.
func verdicts(t *testing.T, r Result, responses []synthResponse) []ItemScore {
	t.Helper()
	byKey := map[runItem]ItemScore{}
	for _, is := range r.Items {
		byKey[runItem{is.Run, is.ID}] = is
	}
	out := make([]ItemScore, len(responses))
	for i, resp := range responses {
		is, ok := byKey[runItem{resp.Run, resp.ID}]
		if !ok {
			t.Fatalf("no verdict on %s run %d", resp.ID, resp.Run)
		}
		out[i] = is
	}
	return out
}

// The ports of lm-eval's filters and simple-evals' pattern read what the
// reference code reads, and score as it scores, on every synthetic response.
func TestGPQAReferencePorts(t *testing.T) {
	s := loadSynthGPQA(t)
	for i, r := range s.responses {
		text := ReferenceText(r.Response.Response)
		q := ShuffleGPQA(s.byID[r.ID], synthSeed, r.Run)
		ref := s.ref[i].By
		if got, want := LMEvalStrict(text), ref[ScorerLMEvalStrict].Got; got != want {
			t.Errorf("%s run %d (%s): LMEvalStrict = %q, lm-eval %q", r.ID, r.Run, r.Template, got, want)
		}
		if got, want := LMEvalFlexible(text, LMEvalChoices(q.Choices)), ref[ScorerLMEvalFlexible].Got; got != want {
			t.Errorf("%s run %d (%s): LMEvalFlexible = %q, lm-eval %q", r.ID, r.Run, r.Template, got, want)
		}
		if got, _ := SimpleEvalsChoice(text); got != ref[ScorerSimpleEvals].Got {
			t.Errorf("%s run %d (%s): SimpleEvalsChoice = %q, simple-evals %q", r.ID, r.Run, r.Template, got, ref[ScorerSimpleEvals].Got)
		}
	}
	for _, scorer := range []string{ScorerLMEvalStrict, ScorerLMEvalFlexible, ScorerSimpleEvals} {
		res, err := ScoreGPQA(s.items, plain(s.responses), synthSeed, ScoreOptions{Scorer: scorer})
		if err != nil {
			t.Fatal(err)
		}
		if res.Scorer != scorer {
			t.Errorf("ScoreGPQA(%s).Scorer = %q", scorer, res.Scorer)
		}
		agree := 0
		for i, v := range verdicts(t, res, s.responses) {
			if v.Correct == s.ref[i].By[scorer].Correct {
				agree++
			} else {
				t.Errorf("%s: %s run %d (%s): correct = %v, the reference %v", scorer, v.ID, v.Run, s.responses[i].Template, v.Correct, s.ref[i].By[scorer].Correct)
			}
		}
		if agree != len(s.responses) {
			t.Errorf("%s: agrees with the reference on %d of %d", scorer, agree, len(s.responses))
		}
	}
}

type synthAIME struct {
	items     []AIMEItem
	responses []synthResponse
	ref       []synthReference
}

func loadSynthAIME(t *testing.T) synthAIME {
	t.Helper()
	items, err := LoadAIME(filepath.Join(synthDir, "aime.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := synthAIME{items: items, responses: readSynthJSONL[synthResponse](t, "aime-responses.jsonl")}
	if len(s.responses) != 304 {
		t.Fatalf("aime-responses.jsonl: %d responses, want 304", len(s.responses))
	}
	s.ref = readReference(t, "aime-reference.jsonl", s.responses)
	return s
}

// The math-verify scorer runs the package itself (parley_tools.mathverify in
// PARLEY_PYTHON, this tree's scripts first on its path): its verdicts are
// the fixture's, which bench_synth.py took from the same package.
func TestMathVerifyScorer(t *testing.T) {
	python := os.Getenv("PARLEY_PYTHON")
	if python == "" {
		t.Skip("PARLEY_PYTHON is not set (make test sets it to the venv's python, which has math-verify)")
	}
	scripts, err := filepath.Abs("../../scripts")
	if err != nil {
		t.Fatal(err)
	}
	s := loadSynthAIME(t)
	mv := &MathVerify{Python: python, Env: []string{"PYTHONPATH=" + scripts}}
	res, err := ScoreAIME(context.Background(), AIME2024, s.items, plain(s.responses), ScoreOptions{Scorer: ScorerMathVerify, MathVerify: mv})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scorer != ScorerMathVerify || mv.Version == "" {
		t.Errorf("ScoreAIME(math-verify): scorer %q, version %q", res.Scorer, mv.Version)
	}
	for i, v := range verdicts(t, res, s.responses) {
		want := s.ref[i].By[ScorerMathVerify]
		if v.Correct != want.Correct || v.Got != want.Got {
			t.Errorf("%s run %d (%s): math-verify = %q %v, the fixture %q %v", v.ID, v.Run, s.responses[i].Template, v.Got, v.Correct, want.Got, want.Correct)
		}
	}
}

// A Python without math-verify (or without parley_tools) is an error that
// names the fix; so is a missing interpreter.
func TestMathVerifyErrors(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python")
	// A "python" whose parley_tools.mathverify reports math-verify missing.
	script := "#!/bin/sh\necho 'parley_tools.mathverify: No module named math_verify: install parley'\"'\"'s environment (make venv)' >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	noTools := filepath.Join(dir, "python-no-tools")
	script = "#!/bin/sh\necho \"/usr/bin/python3: Error while finding module specification for 'parley_tools.mathverify' (ModuleNotFoundError: No module named 'parley_tools')\" >&2\nexit 1\n"
	if err := os.WriteFile(noTools, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		python, want string
	}{
		{"", "pass --python PATH"},
		{filepath.Join(dir, "absent"), "pass --python PATH"},
		{fake, "make venv"},
		{noTools, "pip install -e scripts"},
	}
	for _, tt := range tests {
		_, err := (&MathVerify{Python: tt.python}).Verify(context.Background(), []MathVerifyPair{{Gold: "1", Response: "1"}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("MathVerify{%q}.Verify error = %v, want it to contain %q", tt.python, err, tt.want)
		}
	}
}

// agreementTable is the markdown table of how often each pair of scorers
// agree (both credit a response or both do not), with what each credits.
func agreementTable(title string, n int, names []string, credit map[string][]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d synthetic responses; each cell counts the responses on which the row's and the column's verdicts (right or not) agree.\n\n", title, n)
	b.WriteString("| scorer | credits |")
	for _, c := range names {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(names)) + "\n")
	for _, r := range names {
		count := 0
		for _, v := range credit[r] {
			if v {
				count++
			}
		}
		fmt.Fprintf(&b, "| %s | %d |", r, count)
		for _, c := range names {
			agree := 0
			for i := range credit[r] {
				if credit[r][i] == credit[c][i] {
					agree++
				}
			}
			fmt.Fprintf(&b, " %d |", agree)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The agreement of parley's scorer (now, and before this scorer's
// changes: parley-before.jsonl) with the references and with the intended
// answers, on the synthetic set: the table of docs/bench-scorers.md.
// Regenerate with go test -update after a scorer changes, and copy it
// there.
func TestSyntheticAgreement(t *testing.T) {
	g := loadSynthGPQA(t)
	a := loadSynthAIME(t)
	before := readSynthJSONL[struct {
		Benchmark string `json:"benchmark"`
		refVerdict
	}](t, "parley-before.jsonl")
	if len(before) != len(g.responses)+len(a.responses) {
		t.Fatalf("parley-before.jsonl: %d lines, want %d", len(before), len(g.responses)+len(a.responses))
	}

	credit := map[string][]bool{}
	gres, err := ScoreGPQA(g.items, plain(g.responses), synthSeed, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range verdicts(t, gres, g.responses) {
		r := g.responses[i]
		credit["intended"] = append(credit["intended"], r.Intended == r.Expected)
		credit["parley"] = append(credit["parley"], v.Correct)
		credit["parley before"] = append(credit["parley before"], before[i].Correct)
		for _, s := range []string{ScorerLMEvalStrict, ScorerLMEvalFlexible, ScorerSimpleEvals} {
			credit[s] = append(credit[s], g.ref[i].By[s].Correct)
		}
	}
	var b strings.Builder
	b.WriteString(agreementTable("GPQA", len(g.responses), []string{"intended", "parley", "parley before", ScorerLMEvalStrict, ScorerLMEvalFlexible, ScorerSimpleEvals}, credit))

	credit = map[string][]bool{}
	ares, err := ScoreAIME(context.Background(), AIME2024, a.items, plain(a.responses), ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range verdicts(t, ares, a.responses) {
		r := a.responses[i]
		credit["intended"] = append(credit["intended"], r.Intended == r.Expected)
		credit["parley"] = append(credit["parley"], v.Correct)
		credit["parley before"] = append(credit["parley before"], before[len(g.responses)+i].Correct)
		credit[ScorerMathVerify] = append(credit[ScorerMathVerify], a.ref[i].By[ScorerMathVerify].Correct)
	}
	b.WriteString("\n")
	b.WriteString(agreementTable("AIME", len(a.responses), []string{"intended", "parley", "parley before", ScorerMathVerify}, credit))
	golden.Check(t, filepath.Join(synthDir, "agreement.golden.md"), []byte(b.String()))
}
