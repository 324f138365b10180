package scenario

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readScenario(t *testing.T, name string) *Scenario {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse(%s) = %v", name, err)
	}
	return s
}

// bruteForce lists the packages meeting every listed party's BATNA by
// decoding every package number: independent of the pruned walk.
func bruteForce(s *Scenario, parties []int) [][]int {
	var out [][]int
	for idx := 0; idx < s.Packages(); idx++ {
		pkg := PackageAt(s, idx)
		if IsFeasible(s, parties, pkg) {
			out = append(out, pkg)
		}
	}
	return out
}

// tableScenario wraps a bare score table (no validation) for the
// enumerator.
func tableScenario(sizes []int, scores [][][]int, batna []int) *Scenario {
	s := &Scenario{}
	for i, m := range sizes {
		s.Issues = append(s.Issues, Issue{ID: string(rune('A' + i)), Options: make([]string, m)})
	}
	for p := range scores {
		s.Parties = append(s.Parties, Party{Scores: scores[p], BATNA: batna[p]})
	}
	return s
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestFeasibleMatchesPythonBruteForce checks the pruned enumerator against
// the packages gen_enumerate.py found with itertools.product.
func TestFeasibleMatchesPythonBruteForce(t *testing.T) {
	b, err := os.ReadFile("testdata/enumerate_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Sizes    []int     `json:"sizes"`
		Scores   [][][]int `json:"scores"`
		BATNA    []int     `json:"batna"`
		Feasible [][]int   `json:"feasible"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d cases in the fixture, want at least 10", len(cases))
	}
	for i, c := range cases {
		s := tableScenario(c.Sizes, c.Scores, c.BATNA)
		got := Feasible(s, all(len(c.Scores)))
		if len(got) == 0 && len(c.Feasible) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.Feasible) {
			t.Errorf("case %d (sizes %v): Feasible = %v, want %v", i, c.Sizes, got, c.Feasible)
		}
		if n := CountFeasible(s, all(len(c.Scores))); n != len(c.Feasible) {
			t.Errorf("case %d: CountFeasible = %d, want %d", i, n, len(c.Feasible))
		}
	}
}

// TestFeasibleMatchesBruteForce checks the pruned enumerator against
// decoding every package, on random small tables and every subset of
// parties.
func TestFeasibleMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := 0; c < 300; c++ {
		issues := 1 + rng.IntN(4)
		sizes := make([]int, issues)
		for i := range sizes {
			sizes[i] = 2 + rng.IntN(3)
		}
		np := 1 + rng.IntN(4)
		scores := make([][][]int, np)
		batna := make([]int, np)
		for p := range scores {
			best := 0
			for i, m := range sizes {
				row := make([]int, m)
				for k := range row {
					row[k] = rng.IntN(15)
				}
				scores[p] = append(scores[p], row)
				best += slicesMax(row)
				_ = i
			}
			batna[p] = rng.IntN(best + 3)
		}
		s := tableScenario(sizes, scores, batna)
		for mask := 0; mask < 1<<np; mask++ {
			var parties []int
			for p := 0; p < np; p++ {
				if mask&(1<<p) != 0 {
					parties = append(parties, p)
				}
			}
			got, want := Feasible(s, parties), bruteForce(s, parties)
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("case %d parties %v: Feasible = %v, brute force %v", c, parties, got, want)
			}
		}
	}
}

func slicesMax(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// TestMeasureTiny checks every property of testdata/tiny.json against the
// values worked out by hand (the 8 packages and each party's totals are
// listed in the comments).
func TestMeasureTiny(t *testing.T) {
	s := readScenario(t, "tiny.json")
	// Totals per package (hb1 hb2 g1 g2), packages as option indices:
	// 000: 15 11 10  7   001: 23 11  5 10   010: 13  4 14  4   011: 21  4  9  7
	// 100:  5 17 10 10   101: 13 17  5 13   110:  3 10 14  7   111: 11 10  9 10
	// BATNAs 18 11 5 7: only 001 meets all four.
	pr := Measure(s)
	want := Properties{
		ID: "tiny", Type: Type2HB2G, Packages: 8, Feasible: 1,
		Acceptable: map[string]int{"hb1": 2, "hb2": 4, "g1": 8, "g2": 7},
		// At 001 the slacks are 5 0 0 3: hb2 and g1 share the least.
		Constrained: Constrained{Tie: 1},
		// hb1's ideal is 001 itself; hb2's is A2 B1 C1|C2 (one change);
		// g1's is A1|A2 B2 C1 (two); g2's is A2 B1 C2 (one).
		OptionChanges: map[string]int{"hb1": 0, "hb2": 1, "g1": 2, "g2": 1},
		// Ideal totals 23 17 14 13 against 23 11 5 10 in 001.
		UtilityLoss: map[string]int{"hb1": 0, "hb2": 6, "g1": 9, "g2": 3},
	}
	if !reflect.DeepEqual(pr, want) {
		t.Errorf("Measure(tiny) =\n%+v\nwant\n%+v", pr, want)
	}
	if got := Feasible(s, s.Honest()); !reflect.DeepEqual(got, [][]int{{0, 0, 1}}) {
		t.Errorf("Feasible(tiny) = %v, want [[0 0 1]]", got)
	}
	if got := s.PackageLabel([]int{0, 0, 1}); got != "A1 B1 C2" {
		t.Errorf("PackageLabel = %q", got)
	}
}

// TestConstrainedPerPackage checks the most-constrained count of the
// seed's table 5 on tiny.json with other BATNAs: it counts packages, the
// kind with the least slack (utility − BATNA) at each; the totals are in
// TestMeasureTiny's comment.
func TestConstrainedPerPackage(t *testing.T) {
	tests := []struct {
		batna []int // hb1 hb2 g1 g2
		want  Constrained
	}{
		// 000: slacks 2 1 5 0 → G; 001: 10 1 0 3 → G; 101: 0 7 0 6 → tie.
		{[]int{13, 10, 5, 7}, Constrained{G: 2, Tie: 1}},
		// 000: 2 7 5 3 → HB; 001: 10 7 0 6 → G; 010: 0 0 9 0 → tie;
		// 011: 8 0 4 3 → HB; 101: 0 13 0 9 → tie.
		{[]int{13, 4, 5, 4}, Constrained{HB: 2, G: 1, Tie: 2}},
	}
	for _, tt := range tests {
		s := readScenario(t, "tiny.json")
		for p, b := range tt.batna {
			s.Parties[p].BATNA = b
		}
		pr := Measure(s)
		if pr.Constrained != tt.want || pr.Feasible != tt.want.HB+tt.want.G+tt.want.Tie {
			t.Errorf("BATNAs %v: Constrained = %+v over %d feasible, want %+v", tt.batna, pr.Constrained, pr.Feasible, tt.want)
		}
	}
}

// TestTargetCheck: the seed's table 5 shares are package counts (151, 25
// and 13 of 189 for 2HB+2G; 40 and 110 of 150 for 1HB+3G), which its
// target accepts; a set whose hard bargainer is the most constrained at
// every package (the sets shipped before) misses it, naming the rows.
func TestTargetCheck(t *testing.T) {
	props := func(typ string, feasible, hb, g, tie int, chHB, chG float64) SetProperties {
		all := float64(hb + g + tie)
		return SetProperties{Type: typ, Scenarios: 20, FeasibleMean: float64(feasible) / 20,
			Constrained:   Constrained{HB: hb, G: g, Tie: tie},
			ConstrainedHB: 100 * float64(hb) / all, ConstrainedG: 100 * float64(g) / all, ConstrainedTie: 100 * float64(tie) / all,
			ChangesHB: chHB, ChangesG: chG}
	}
	if err := PaperTarget(Type2HB2G).Check(props(Type2HB2G, 189, 151, 25, 13, 53.0/40, 2.0/40)); err != nil {
		t.Errorf("the seed's 2HB+2G counts: %v", err)
	}
	if err := PaperTarget(Type1HB3G).Check(props(Type1HB3G, 150, 40, 110, 0, 2, 1)); err != nil {
		t.Errorf("the seed's 1HB+3G counts: %v", err)
	}
	err := PaperTarget(Type2HB2G).Check(props(Type2HB2G, 177, 177, 0, 0, 1.43, 2.20))
	for _, w := range []string{"honest-feasible packages, mean 8.85, target 9.45 ± 0.10", "most constrained HB (%) 100.00, target 79.90 ± 2.00", "option changes G 2.20, target 0.05 ± 0.05"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Check(old 2HB+2G set) = %v, want it to contain %q", err, w)
		}
	}
}

// TestBadScenarios: each bad scenario fails to parse with an error that
// names what is wrong.
func TestBadScenarios(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"bad_no_feasible.json", []string{"no feasible package", "none of the 8 packages"}},
		{"bad_malformed_scores.json", []string{"party 1 (hb2)", "malformed score table", "2 rows"}},
		{"bad_malformed_row.json", []string{"party 0 (hb1)", "malformed score table", "issue C has 3 scores, want 2"}},
		{"bad_negative_score.json", []string{"party 2 (g1)", "scores -1"}},
		{"bad_batna_above.json", []string{"party g2 (Council)", "BATNA 14 is above every package", "scores 13"}},
		{"bad_duplicate_name.json", []string{"duplicate party", `name "Tenants" appears twice`}},
		{"bad_duplicate_role.json", []string{"duplicate party", `role "g1" appears twice`}},
		{"bad_adversary_feasible.json", []string{"adversary must prefer no agreement", "BATNA 6 does not exceed its best package (6)"}},
		{"bad_four_parties.json", []string{"4 parties, a 2hb2g scenario has 5"}},
		{"bad_malformed_json.json", []string{"malformed scenario JSON"}},
		{"bad_unknown_field.json", []string{"malformed scenario JSON", `unknown field "colour"`}},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(b)
		if err == nil {
			t.Errorf("Parse(%s) = nil error, want one", tt.file)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%s) = %q, want it to contain %q", tt.file, err, w)
			}
		}
	}
}

func TestGenerate(t *testing.T) {
	for _, typ := range Types {
		opts := GenerateOptions{Type: typ, N: 6, Seed: 42}
		a, err := Generate(opts)
		if err != nil {
			t.Fatalf("Generate(%s) = %v", typ, err)
		}
		b, _ := Generate(opts)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("Generate(%s) is not deterministic", typ)
		}
		if err := PaperTarget(typ).Check(Summarize(a)); err != nil {
			t.Errorf("Generate(%s): %v", typ, err)
		}
		d := DefaultDifficulty(typ)
		for _, s := range a {
			if err := s.Validate(); err != nil {
				t.Errorf("generated %s: %v", s.ID, err)
			}
			pr := Measure(s)
			if err := d.Check(pr); err != nil {
				t.Error(err)
			}
			if pr.Packages != 1024 {
				t.Errorf("%s: %d packages, want 1024", s.ID, pr.Packages)
			}
			for i, p := range s.Parties {
				if s.MaxUtility(i) != 100 {
					t.Errorf("%s %s: ideal total %d, want 100", s.ID, p.Role, s.MaxUtility(i))
				}
			}
		}
		c, _ := Generate(GenerateOptions{Type: typ, N: 6, Seed: 43})
		if jc, _ := json.Marshal(c); string(jc) == string(ja) {
			t.Errorf("Generate(%s) ignores the seed", typ)
		}
	}
	if _, err := Generate(GenerateOptions{Type: "3hb", N: 1}); err == nil || !strings.Contains(err.Error(), "unknown scenario type") {
		t.Errorf("Generate(3hb) = %v", err)
	}
	// An impossible range is an error naming the scenario and the range.
	_, err := Generate(GenerateOptions{Type: Type2HB2G, N: 1, Difficulty: Difficulty{FeasibleMin: 1, FeasibleMax: 1, LossMax: 0}, MaxAttempts: 5, NoTarget: true})
	if err == nil || !strings.Contains(err.Error(), "no draw in 5 attempts") {
		t.Errorf("Generate with an impossible range = %v", err)
	}
	// A target the draws cannot reach is an error naming the row.
	far := PaperTarget(Type1HB3G)
	far.ChangesG = 4
	_, err = Generate(GenerateOptions{Type: Type1HB3G, N: 4, Seed: 1, Target: &far, Pool: 8})
	if err == nil || !strings.Contains(err.Error(), "misses its target") || !strings.Contains(err.Error(), "option changes G 2.92, target 4.00") {
		t.Errorf("Generate with an unreachable target = %v", err)
	}
	// A target outside the stated range is refused before any draw.
	bad := PaperTarget(Type2HB2G)
	bad.FeasibleMean = 12
	if _, err := Generate(GenerateOptions{Type: Type2HB2G, N: 1, Target: &bad}); err == nil || !strings.Contains(err.Error(), "target feasible mean 12.00 is outside the feasible range [8, 10]") {
		t.Errorf("Generate with a target out of range = %v", err)
	}
}

// TestFixedSets checks the committed scenario sets: 20 valid scenarios per
// type, each in its stated range, equal to what the generator makes from
// their seed (regenerate with `parley scenario generate`, see the README
// of sets/).
func TestFixedSets(t *testing.T) {
	var both []*Scenario
	for _, typ := range Types {
		path := filepath.Join("sets", typ+".jsonl")
		set, err := LoadSet(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(set) != 20 {
			t.Errorf("%s: %d scenarios, want 20", path, len(set))
		}
		fresh, err := Generate(GenerateOptions{Type: typ, N: 20, Seed: FixedSetSeed})
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(set)
		jb, _ := json.Marshal(fresh)
		if string(ja) != string(jb) {
			t.Errorf("%s differs from Generate(seed %d): regenerate it", path, FixedSetSeed)
		}
		both = append(both, set...)
		sp := Summarize(set)
		d := DefaultDifficulty(typ)
		if sp.FeasibleMin < d.FeasibleMin || sp.FeasibleMax > d.FeasibleMax || sp.Packages != 1024 {
			t.Errorf("%s: properties %+v outside the stated range %+v", path, sp, d)
		}
		// Every row of the seed's table 5, within the stated tolerance.
		if err := PaperTarget(typ).Check(sp); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	// both.jsonl is the two sets, 2HB+2G first.
	mixed, err := LoadSet(filepath.Join("sets", "both.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(mixed)
	jb, _ := json.Marshal(both)
	if string(ja) != string(jb) {
		t.Error("sets/both.jsonl is not 2hb2g.jsonl then 1hb3g.jsonl: regenerate it")
	}
}

func TestSummarizeTiny(t *testing.T) {
	s := readScenario(t, "tiny.json")
	sp := Summarize([]*Scenario{s, s})
	want := SetProperties{Type: Type2HB2G, Scenarios: 2, Packages: 8, FeasibleMean: 1, FeasibleMin: 1, FeasibleMax: 1,
		FeasibleShare: 12.5, Constrained: Constrained{Tie: 2}, ConstrainedTie: 100, ChangesHB: 0.5, ChangesG: 1.5, LossHB: 3, LossG: 6}
	if sp != want {
		t.Errorf("Summarize = %+v, want %+v", sp, want)
	}
	tab := PropertiesTable([]SetProperties{sp})
	for _, w := range []string{"| 2HB+2G |", "| Honest-feasible packages, mean [range] | 1.00 [1, 1] |", "| 0.0 / 0.0 / 100.0 |", "| 0.50 / 1.50 |"} {
		if !strings.Contains(tab, w) {
			t.Errorf("PropertiesTable lacks %q:\n%s", w, tab)
		}
	}
}
