package single

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// TestSampleCurriculum: the bundled open-ended questions are 20 rows
// o001…o020, each starting with "Imagine", 5 of them in split eval.
func TestSampleCurriculum(t *testing.T) {
	got, err := SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Fatalf("SampleCurriculum() has %d prompts, want 20", len(got))
	}
	eval := 0
	tasks := map[string]bool{}
	for i, p := range got {
		if want := fmt.Sprintf("o%03d", i+1); p.ID != want {
			t.Errorf("prompt %d id = %q, want %q", i, p.ID, want)
		}
		if p.Category != dataset.CategoryOpenEnded {
			t.Errorf("prompt %s category %q, want %s", p.ID, p.Category, dataset.CategoryOpenEnded)
		}
		if tasks[p.Task] {
			t.Errorf("prompt %s repeats a task", p.ID)
		}
		tasks[p.Task] = true
		if !strings.HasPrefix(p.Task, "Imagine") {
			t.Errorf("open-ended %s does not start with Imagine: %q", p.ID, p.Task)
		}
		switch p.Split {
		case dataset.SplitEval:
			eval++
		case dataset.SplitTrain:
		default:
			t.Errorf("prompt %s has split %q", p.ID, p.Split)
		}
	}
	if eval != 5 {
		t.Errorf("%d rows in split eval, want 5", eval)
	}
}

// TestBuiltinName: the registered game's builtin:open-ended loads through
// the game's LoadOptions, as configs and existing runs name it.
func TestBuiltinName(t *testing.T) {
	spec, ok := rollout.Lookup(Name)
	if !ok {
		t.Fatal("single is not registered")
	}
	for _, path := range []string{"builtin:open-ended", spec.Curriculum.Default, spec.EvalSet.Curriculum} {
		if ps, err := dataset.LoadPrompts(path, spec.LoadOptions()); err != nil || len(ps) != 20 {
			t.Errorf("LoadPrompts(%q) = %d rows, %v; want 20", path, len(ps), err)
		}
	}
}
