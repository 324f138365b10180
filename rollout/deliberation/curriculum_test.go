package deliberation

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// TestSampleCurriculum: the bundled dilemmas are 40 rows d001…d040 in the
// 30/40/30 mix (every ten rows 3/4/3), each ending with a question, with
// the library's persona pairs cycled and resolved; a quarter of each
// category is held out in split eval.
func TestSampleCurriculum(t *testing.T) {
	got, err := SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("SampleCurriculum() has %d prompts, want 40", len(got))
	}
	lib := dataset.PersonaLibrary()
	counts, eval := map[string]int{}, map[string]int{}
	tasks := map[string]bool{}
	for i, p := range got {
		counts[p.Category]++
		switch p.Split {
		case dataset.SplitEval:
			eval[p.Category]++
		case dataset.SplitTrain:
		default:
			t.Errorf("prompt %s has split %q", p.ID, p.Split)
		}
		if want := fmt.Sprintf("d%03d", i+1); p.ID != want {
			t.Errorf("prompt %d id = %q, want %q", i, p.ID, want)
		}
		if tasks[p.Task] {
			t.Errorf("prompt %s repeats a task", p.ID)
		}
		tasks[p.Task] = true
		if !strings.HasSuffix(strings.TrimSpace(p.Task), "?") {
			t.Errorf("dilemma %s does not end with a question: %q", p.ID, p.Task)
		}
		pair := lib[i%len(lib)]
		if p.PersonaPairID != pair.ID || p.Persona("A") != pair.A || p.Persona("B") != pair.B {
			t.Errorf("dilemma %s personas = %q (%q / %q), want %q resolved", p.ID, p.PersonaPairID, p.Persona("A"), p.Persona("B"), pair.ID)
		}
	}
	wantCounts := map[string]int{dataset.CategoryProfessional: 12, dataset.CategoryInterpersonal: 16, dataset.CategoryMicroEthics: 12}
	wantEval := map[string]int{dataset.CategoryProfessional: 3, dataset.CategoryInterpersonal: 4, dataset.CategoryMicroEthics: 3}
	if !maps.Equal(counts, wantCounts) || !maps.Equal(eval, wantEval) {
		t.Errorf("categories %v, eval %v; want %v, eval %v", counts, eval, wantCounts, wantEval)
	}
	for start := 0; start+10 <= len(got); start += 10 {
		c := map[string]int{}
		for _, p := range got[start : start+10] {
			c[p.Category]++
		}
		if c[dataset.CategoryProfessional] != 3 || c[dataset.CategoryInterpersonal] != 4 || c[dataset.CategoryMicroEthics] != 3 {
			t.Errorf("dilemmas %d..%d mix = %v, want 3/4/3", start, start+9, c)
		}
	}
}

// TestBuiltinName: the registered game's builtin:dilemmas loads through
// the game's LoadOptions, as configs and existing runs name it
// (curriculum.path, the default, the conflict eval set).
func TestBuiltinName(t *testing.T) {
	spec, ok := rollout.Lookup(Name)
	if !ok {
		t.Fatal("deliberation is not registered")
	}
	for _, path := range []string{"builtin:dilemmas", spec.Curriculum.Default, spec.EvalSet.Curriculum} {
		ps, err := dataset.LoadPrompts(path, spec.LoadOptions())
		if err != nil || len(ps) != 40 || ps[0].Persona("A") == "" {
			t.Errorf("LoadPrompts(%q) = %d rows, %v; want 40 with personas", path, len(ps), err)
		}
	}
}
