package dataset

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// table6 is seed 000's Table 6, the first six pairs of the library.
var table6 = [][2]string{
	{"Make decisions based strictly on data, metrics, and logical reasoning, ignoring emotional aspects.",
		"Prioritize emotional resonance, intuition, and creating a ‘good feeling’ over cold, hard data."},
	{"Maximize personal gain, convenience, and individual benefit above all else.",
		"Ensure the final outcome benefits the entire community, even at significant personal inconvenience."},
	{"Execute the plan as quickly as possible; speed is the most critical measure of success.",
		"Take all the time necessary to achieve the highest quality result; do not rush perfection."},
	{"Adhere to proven, traditional methods and respect historical precedent. Avoid risky new ideas.",
		"Disrupt the status quo with a highly innovative, experimental, and forward-thinking solution."},
	{"Ensure the plan is absolutely transparent, with every detail made public to all stakeholders.",
		"Maintain strategic ambiguity and reveal information only on a need-to-know basis."},
	{"Focus exclusively on achieving the primary, tangible goal, ignoring all side-quests or secondary effects.",
		"Maximize the number of positive side-effects and intangible benefits, such as learning and relationship-building."},
}

func TestPersonaLibrary(t *testing.T) {
	lib := PersonaLibrary()
	if len(lib) != 25 {
		t.Fatalf("len(PersonaLibrary()) = %d, want 25", len(lib))
	}
	seen := map[string]string{}
	names := map[string]string{}
	for i, p := range lib {
		for _, n := range []string{p.NameA, p.NameB} {
			if n == "" || len(strings.Fields(n)) > 3 {
				t.Errorf("%s: short persona name %q, want one to three words", p.ID, n)
			}
			if first, dup := names[n]; dup {
				t.Errorf("short name %q of %s already in %s", n, p.ID, first)
			}
			names[n] = p.ID
		}
		if want := fmt.Sprintf("p%02d", i+1); p.ID != want {
			t.Errorf("PersonaLibrary()[%d].ID = %q, want %q", i, p.ID, want)
		}
		for _, s := range []string{p.A, p.B} {
			if first, dup := seen[s]; dup {
				t.Errorf("persona %q of %s already in %s", s, p.ID, first)
			}
			seen[s] = p.ID
			if !strings.HasSuffix(s, ".") {
				t.Errorf("persona %q of %s is not one sentence ending in a period", s, p.ID)
			}
		}
	}
	for i, want := range table6 {
		if lib[i].A != want[0] || lib[i].B != want[1] {
			t.Errorf("PersonaLibrary()[%d] = %q / %q, want Table 6's %q / %q", i, lib[i].A, lib[i].B, want[0], want[1])
		}
	}
	lib[0].A = "changed"
	if PersonaLibrary()[0].A == "changed" {
		t.Error("PersonaLibrary() returned shared memory")
	}
}

// TestSampleCurriculaSplits: each bundled curriculum holds out a quarter of
// every category in split eval; the rest is split train.
func TestSampleCurriculaSplits(t *testing.T) {
	tests := []struct {
		name string
		eval map[string]int
		n    int
	}{
		{SampleDilemmas, map[string]int{CategoryProfessional: 3, CategoryInterpersonal: 4, CategoryMicroEthics: 3}, 40},
		{SampleOpenEnded, map[string]int{CategoryOpenEnded: 5}, 20},
	}
	for _, tt := range tests {
		ps, err := SampleCurriculum(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		eval, train := map[string]int{}, 0
		for _, p := range ps {
			switch p.Split {
			case SplitEval:
				eval[p.Category]++
			case SplitTrain:
				train++
			default:
				t.Errorf("%s: prompt %s has split %q", tt.name, p.ID, p.Split)
			}
		}
		total := 0
		for _, n := range tt.eval {
			total += n
		}
		if !reflect.DeepEqual(eval, tt.eval) || train != tt.n-total {
			t.Errorf("%s: eval %v and %d train rows, want eval %v and %d train", tt.name, eval, train, tt.eval, tt.n-total)
		}
	}
}

func TestSampleCurricula(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		prefix   string
		counts   map[string]int
		personas bool
	}{
		{SampleDilemmas, 40, "d", map[string]int{CategoryProfessional: 12, CategoryInterpersonal: 16, CategoryMicroEthics: 12}, true},
		{SampleOpenEnded, 20, "o", map[string]int{CategoryOpenEnded: 20}, false},
	}
	lib := PersonaLibrary()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SampleCurriculum(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			viaPath, err := LoadPrompts(BuiltinPrefix+tt.name, LoadOptions{RequirePersonas: tt.personas})
			if err != nil || len(viaPath) != len(got) {
				t.Fatalf("LoadPrompts(%q) = %d prompts, %v; want %d", BuiltinPrefix+tt.name, len(viaPath), err, len(got))
			}
			if len(got) != tt.n {
				t.Fatalf("SampleCurriculum(%q) has %d prompts, want %d", tt.name, len(got), tt.n)
			}
			counts := map[string]int{}
			tasks := map[string]bool{}
			for i, p := range got {
				counts[p.Category]++
				if want := fmt.Sprintf("%s%03d", tt.prefix, i+1); p.ID != want {
					t.Errorf("prompt %d id = %q, want %q", i, p.ID, want)
				}
				if tasks[p.Task] {
					t.Errorf("prompt %s repeats a task", p.ID)
				}
				tasks[p.Task] = true
				if !strings.HasSuffix(strings.TrimSpace(p.Task), "?") && tt.personas {
					t.Errorf("dilemma %s does not end with a question: %q", p.ID, p.Task)
				}
				if !tt.personas && !strings.HasPrefix(p.Task, "Imagine") {
					t.Errorf("open-ended %s does not start with Imagine: %q", p.ID, p.Task)
				}
				if tt.personas {
					pair := lib[i%len(lib)]
					if p.PersonaPairID != pair.ID || p.Persona("A") != pair.A || p.Persona("B") != pair.B {
						t.Errorf("dilemma %s personas = %q (%q / %q), want %q resolved", p.ID, p.PersonaPairID, p.Persona("A"), p.Persona("B"), pair.ID)
					}
				}
			}
			for c, n := range tt.counts {
				if counts[c] != n {
					t.Errorf("SampleCurriculum(%q) has %d %s prompts, want %d", tt.name, counts[c], c, n)
				}
			}
			// Every prefix of ten keeps the 3/4/3 mix.
			if tt.personas {
				for start := 0; start+10 <= len(got); start += 10 {
					c := map[string]int{}
					for _, p := range got[start : start+10] {
						c[p.Category]++
					}
					if c[CategoryProfessional] != 3 || c[CategoryInterpersonal] != 4 || c[CategoryMicroEthics] != 3 {
						t.Errorf("dilemmas %d..%d mix = %v, want 3/4/3", start, start+9, c)
					}
				}
			}
		})
	}
	if _, err := SampleCurriculum("nope"); err == nil {
		t.Error(`SampleCurriculum("nope") = nil error, want one`)
	}
}

// TestGameBuiltins: LoadOptions.Builtins adds a game's bundled curricula
// to builtin:<name>; an unknown name lists every name there is.
func TestGameBuiltins(t *testing.T) {
	game := map[string][]byte{"toy-set": []byte(`{"id":"t1","category":"toy","task":"Count.","scenario":"{}"}` + "\n")}
	opts := LoadOptions{Categories: []string{"toy"}, Builtins: game}
	ps, err := LoadPrompts(BuiltinPrefix+"toy-set", opts)
	if err != nil || len(ps) != 1 || ps[0].ID != "t1" || ps[0].Scenario != "{}" {
		t.Fatalf("LoadPrompts(builtin:toy-set) = %+v, %v; want row t1", ps, err)
	}
	if ps, err := LoadPrompts(BuiltinPrefix+SampleOpenEnded, opts); err != nil || len(ps) != 20 {
		t.Errorf("dataset's own curriculum beside a game's: %d rows, %v", len(ps), err)
	}
	_, err = LoadPrompts(BuiltinPrefix+"nope", opts)
	if err == nil || !strings.Contains(err.Error(), `"builtin:nope"`) || !strings.Contains(err.Error(), "builtin:dilemmas, builtin:open-ended, builtin:toy-set") {
		t.Errorf("LoadPrompts(builtin:nope) = %v, want an error listing builtin:dilemmas, builtin:open-ended, builtin:toy-set", err)
	}
	if _, err := LoadPrompts(BuiltinPrefix+"toy-set", LoadOptions{Categories: []string{"toy"}}); err == nil {
		t.Error("a game's curriculum loaded without its Builtins")
	}
}
