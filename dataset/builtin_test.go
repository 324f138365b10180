package dataset

import (
	"fmt"
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

// TestGameBuiltins: LoadOptions.Builtins are the games' bundled curricula
// by builtin:<name>; an unknown name lists every name there is, sorted.
func TestGameBuiltins(t *testing.T) {
	game := map[string][]byte{
		"toy-set":   []byte(`{"id":"t1","category":"toy","task":"Count.","scenario":"{}"}` + "\n"),
		"other-set": []byte(`{"id":"o1","category":"toy","task":"Add.","scenario":"{}"}` + "\n"),
	}
	opts := LoadOptions{Categories: []string{"toy"}, Builtins: game}
	ps, err := LoadPrompts(BuiltinPrefix+"toy-set", opts)
	if err != nil || len(ps) != 1 || ps[0].ID != "t1" || ps[0].Scenario != "{}" {
		t.Fatalf("LoadPrompts(builtin:toy-set) = %+v, %v; want row t1", ps, err)
	}
	_, err = LoadPrompts(BuiltinPrefix+"nope", opts)
	if err == nil || !strings.Contains(err.Error(), `"builtin:nope"`) || !strings.Contains(err.Error(), "(want builtin:other-set, builtin:toy-set)") {
		t.Errorf("LoadPrompts(builtin:nope) = %v, want an error listing builtin:other-set, builtin:toy-set", err)
	}
	if _, err := LoadPrompts(BuiltinPrefix+"toy-set", LoadOptions{Categories: []string{"toy"}}); err == nil {
		t.Error("a game's curriculum loaded without its Builtins")
	}
}
