package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadPromptsBadCurricula(t *testing.T) {
	dir := filepath.Join("testdata", "curricula")
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		file    string
		require bool
		want    []string // substrings of the one error
	}{
		{"malformed.jsonl", false, []string{p("malformed.jsonl") + ":2:", "malformed JSON"}},
		{"unknown_field.jsonl", false, []string{p("unknown_field.jsonl") + ":3:", `unknown field "prompt"`}},
		{"empty_task.jsonl", false, []string{p("empty_task.jsonl") + ":2:", "field task: empty"}},
		{"unknown_category.jsonl", false, []string{p("unknown_category.jsonl") + ":1:", `field category: unknown category "medical"`, "micro_ethics"}},
		{"blank_persona.jsonl", false, []string{p("blank_persona.jsonl") + ":2:", "field persona_a: empty or whitespace persona"}},
		{"missing_persona_b.jsonl", false, []string{p("missing_persona_b.jsonl") + ":1:", "field persona_b: empty or whitespace persona"}},
		{"unknown_pair.jsonl", false, []string{p("unknown_pair.jsonl") + ":2:", `field persona_pair_id: unknown persona pair "p99"`}},
		{"same_personas.jsonl", false, []string{p("same_personas.jsonl") + ":1:", "persona_a and persona_b", "identical"}},
		{"duplicate_id.jsonl", false, []string{p("duplicate_id.jsonl") + ":4:", `duplicate id "d1"`, "first at " + p("duplicate_id.jsonl") + ":1"}},
		{"empty.jsonl", false, []string{p("empty.jsonl"), "empty curriculum"}},
		{"blank_lines.jsonl", false, []string{p("blank_lines.jsonl"), "empty curriculum"}},
		{"no_such_file.jsonl", false, []string{p("no_such_file.jsonl"), "no such file"}},
		{"no_personas.jsonl", true, []string{p("no_personas.jsonl") + ":1:", "no personas"}},
		{"empty_id.jsonl", false, []string{p("empty_id.jsonl") + ":1:", "field id: empty"}},
		{"trailing_data.jsonl", false, []string{p("trailing_data.jsonl") + ":1:", "extra data"}},
		{"wrong_type.jsonl", false, []string{p("wrong_type.jsonl") + ":1:", "malformed JSON", "task"}},
		{"curriculum.csv", false, []string{p("curriculum.csv"), "unknown file format"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := LoadPrompts(p(tt.file), LoadOptions{RequirePersonas: tt.require})
			if err == nil {
				t.Fatalf("LoadPrompts(%q) = %d prompts, nil error; want an error", tt.file, len(got))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadPrompts(%q) error = %q, want it to contain %q", tt.file, err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "dataset.LoadPrompts: ") {
				t.Errorf("LoadPrompts(%q) error = %q, want the operation prefix", tt.file, err)
			}
		})
	}
}

func TestLoadPromptsNoPersonasAllowedForSingleAgent(t *testing.T) {
	got, err := LoadPrompts(filepath.Join("testdata", "curricula", "no_personas.jsonl"), LoadOptions{})
	if err != nil || len(got) != 1 {
		t.Fatalf("LoadPrompts(no_personas, single-agent) = %v, %v; want 1 prompt", got, err)
	}
}

func TestLoadPromptsGood(t *testing.T) {
	got, err := LoadPrompts(filepath.Join("testdata", "curricula", "good.jsonl"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lib := PersonaLibrary()
	want := []Prompt{
		{ID: "g1", Category: CategoryProfessional, Task: "A hospital must choose which of two wards to close. Which one, and why?", PersonaPairID: "p05", Personas: lib[4].Personas(), Split: SplitTrain},
		{ID: "g2", Category: CategoryInterpersonal, Task: "Your friend asks you to lie for them. Do you?", Personas: PersonaPairOf("Always protect your friends.", "Always tell the truth."), Split: "eval"},
		{ID: "g3", Category: CategoryOpenEnded, Task: "Imagine you plan a picnic for ten people. Plan it.", Split: SplitTrain},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadPrompts(good.jsonl) =\n%+v\nwant\n%+v", got, want)
	}
	// RequirePersonas rejects g3 only.
	_, err = LoadPrompts(filepath.Join("testdata", "curricula", "good.jsonl"), LoadOptions{RequirePersonas: true})
	if err == nil || !strings.Contains(err.Error(), "good.jsonl:4:") {
		t.Errorf("LoadPrompts(good.jsonl, RequirePersonas) error = %v, want one naming line 4", err)
	}
}

func TestLoadPromptsCustomLibrary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonl")
	if err := WritePromptsJSONL(path, []Prompt{{ID: "a", Category: CategoryMicroEthics, Task: "T?", PersonaPairID: "mine"}}); err != nil {
		t.Fatal(err)
	}
	lib := []PersonaPair{{ID: "mine", A: "Left.", B: "Right."}}
	got, err := LoadPrompts(path, LoadOptions{RequirePersonas: true, Personas: lib})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Persona("A") != "Left." || got[0].Persona("B") != "Right." {
		t.Errorf("LoadPrompts with custom library = %+v, want personas Left./Right.", got[0])
	}
	if _, err := LoadPrompts(path, LoadOptions{}); err == nil || !strings.Contains(err.Error(), `unknown persona pair "mine"`) {
		t.Errorf("LoadPrompts with the default library error = %v, want unknown persona pair", err)
	}
}

func TestPromptsRoundTrip(t *testing.T) {
	prompts, err := sampleDilemmas()
	if err != nil {
		t.Fatal(err)
	}
	prompts = append(prompts, Prompt{ID: "x", Category: CategoryOpenEnded, Task: "Imagine <html> & \"quotes\" — é. Plan it.", Split: "train"})
	dir := t.TempDir()
	for _, name := range []string{"p.jsonl", "p.parquet"} {
		path := filepath.Join(dir, name)
		var err error
		if strings.HasSuffix(name, ".jsonl") {
			err = WritePromptsJSONL(path, prompts)
		} else {
			err = WritePromptsParquet(path, prompts)
		}
		if err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		got, err := LoadPrompts(path, LoadOptions{})
		if err != nil {
			t.Fatalf("LoadPrompts(%q): %v", name, err)
		}
		if !reflect.DeepEqual(got, prompts) {
			t.Errorf("LoadPrompts(%q) after write differs from what was written", name)
		}
	}
}

func TestLoadPromptsParquetBad(t *testing.T) {
	dir := t.TempDir()
	type extra struct {
		ID       string `parquet:"id"`
		Category string `parquet:"category"`
		Task     string `parquet:"task"`
		Prompt   string `parquet:"prompt"`
	}
	type noTask struct {
		ID       string `parquet:"id"`
		Category string `parquet:"category"`
	}
	type intTask struct {
		ID       string `parquet:"id"`
		Category string `parquet:"category"`
		Task     int32  `parquet:"task"`
	}
	type optional struct { // as pandas writes: nullable columns
		ID       *string `parquet:"id,optional"`
		Category *string `parquet:"category,optional"`
		Task     *string `parquet:"task,optional"`
	}
	s := func(v string) *string { return &v }
	write := func(name string, rows any) string {
		path := filepath.Join(dir, name)
		var err error
		switch r := rows.(type) {
		case []extra:
			err = writeParquetTable(path, r)
		case []noTask:
			err = writeParquetTable(path, r)
		case []intTask:
			err = writeParquetTable(path, r)
		case []optional:
			err = writeParquetTable(path, r)
		case []promptRecord:
			err = writeParquetTable(path, r)
		}
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"unknown column", write("extra.parquet", []extra{{ID: "a", Category: "professional", Task: "t", Prompt: "x"}}), []string{"extra.parquet", `unknown column "prompt"`}},
		{"missing column", write("notask.parquet", []noTask{{ID: "a", Category: "professional"}}), []string{"notask.parquet", `missing column "task"`}},
		{"wrong type", write("inttask.parquet", []intTask{{ID: "a", Category: "professional", Task: 3}}), []string{"inttask.parquet", `column "task" has type int32, want string`}},
		{"empty task row", write("emptytask.parquet", []promptRecord{{ID: "a", Category: "professional", Task: "t"}, {ID: "b", Category: "professional"}}), []string{"emptytask.parquet: row 1", "field task: empty"}},
		{"null task row", write("nulltask.parquet", []optional{{ID: s("a"), Category: s("professional"), Task: s("t")}, {ID: s("b"), Category: s("professional")}}), []string{"nulltask.parquet: row 1", "field task: empty"}},
		{"duplicate row", write("dup.parquet", []promptRecord{{ID: "a", Category: "professional", Task: "t"}, {ID: "a", Category: "professional", Task: "u"}}), []string{"dup.parquet: row 1", `duplicate id "a" (first at ` + filepath.Join(dir, "dup.parquet") + ": row 0)"}},
		{"not parquet", filepath.Join("testdata", "curricula", "good.jsonl.parquet"), []string{"good.jsonl.parquet", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadPrompts(tt.path, LoadOptions{})
			if err == nil {
				t.Fatalf("LoadPrompts(%q) = nil error, want one", tt.path)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadPrompts(%q) error = %q, want it to contain %q", tt.path, err, w)
				}
			}
		})
	}
	// A pandas-style file with nullable columns and no nulls loads.
	path := write("ok.parquet", []optional{{ID: s("a"), Category: s("professional"), Task: s("t")}})
	got, err := LoadPrompts(path, LoadOptions{})
	if err != nil || len(got) != 1 || got[0].Task != "t" {
		t.Errorf("LoadPrompts(nullable columns) = %+v, %v; want one prompt with task t", got, err)
	}
}

func TestValidatePrompts(t *testing.T) {
	tests := []struct {
		name    string
		prompts []Prompt
		require bool
		want    string // "" for no error
	}{
		{"ok", []Prompt{{ID: "a", Category: CategoryProfessional, Task: "t", PersonaPairID: "p01"}}, true, ""},
		{"empty", nil, false, "empty curriculum"},
		{"bad category", []Prompt{{ID: "a", Category: "x", Task: "t"}}, false, `prompt 0 (id "a"): field category`},
		{"no personas", []Prompt{{ID: "a", Category: CategoryProfessional, Task: "t"}}, true, "no personas"},
		{"duplicate", []Prompt{{ID: "a", Category: CategoryProfessional, Task: "t"}, {ID: "a", Category: CategoryProfessional, Task: "u"}}, false, `prompt 1 (id "a"): field id: duplicate id "a" (first at prompt 0)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePrompts(tt.prompts, LoadOptions{RequirePersonas: tt.require})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidatePrompts(%s) = %v, want nil", tt.name, err)
				}
				if tt.prompts[0].Persona("A") == "" {
					t.Errorf("ValidatePrompts(%s) did not resolve persona_pair_id", tt.name)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ValidatePrompts(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestLoadPersonaPairs(t *testing.T) {
	dir := filepath.Join("testdata", "personas")
	p := func(name string) string { return filepath.Join(dir, name) }
	got, err := LoadPersonaPairs(p("good.jsonl"))
	want := []PersonaPair{{ID: "x1", A: "Move fast.", B: "Move carefully."}, {ID: "x2", A: "Keep secrets.", B: "Share everything."}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadPersonaPairs(good.jsonl) = %+v, %v; want %+v", got, err, want)
	}
	tmp := t.TempDir()
	pq := filepath.Join(tmp, "lib.parquet")
	if err := WritePersonaPairsParquet(pq, want); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadPersonaPairs(pq); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LoadPersonaPairs(parquet) = %+v, %v; want %+v", got, err, want)
	}
	js := filepath.Join(tmp, "lib.jsonl")
	if err := WritePersonaPairsJSONL(js, want); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadPersonaPairs(js); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LoadPersonaPairs(jsonl) = %+v, %v; want %+v", got, err, want)
	}
	if got, err := LoadPersonaPairs(BuiltinPersonas); err != nil || len(got) != 25 {
		t.Errorf("LoadPersonaPairs(%q) = %d pairs, %v; want 25", BuiltinPersonas, len(got), err)
	}

	bad := []struct {
		file string
		want []string
	}{
		{"duplicate_id.jsonl", []string{p("duplicate_id.jsonl") + ":2:", `duplicate id "x1"`}},
		{"same.jsonl", []string{p("same.jsonl") + ":1:", "identical"}},
		{"blank_b.jsonl", []string{p("blank_b.jsonl") + ":1:", "field b: empty or whitespace"}},
		{"unknown_field.jsonl", []string{p("unknown_field.jsonl") + ":1:", `unknown field "persona_a"`}},
		{"missing.jsonl", []string{p("missing.jsonl"), "no such file"}},
	}
	for _, tt := range bad {
		_, err := LoadPersonaPairs(p(tt.file))
		if err == nil {
			t.Errorf("LoadPersonaPairs(%q) = nil error, want one", tt.file)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("LoadPersonaPairs(%q) error = %q, want it to contain %q", tt.file, err, w)
			}
		}
	}
}

func TestSelectSplitAndCheckTrainRows(t *testing.T) {
	ps := []Prompt{{ID: "a", Split: SplitTrain}, {ID: "b", Split: SplitEval}, {ID: "c"}, {ID: "d", Split: "test"}}
	idsOf := func(ps []Prompt) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.ID)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		split, want, refusal string
	}{
		{"", "a,b,c,d", "cur.jsonl: 1 row is in split eval (ids b), held out for evaluation: training on them is refused"},
		{SplitTrain, "a,c", ""},
		{SplitEval, "b", "cur.jsonl: 1 row is in split eval (ids b)"},
		{"test", "d", ""},
	}
	for _, tt := range tests {
		got := SelectSplit(ps, tt.split)
		if idsOf(got) != tt.want {
			t.Errorf("SelectSplit(%q) = %s, want %s", tt.split, idsOf(got), tt.want)
		}
		err := CheckTrainRows("cur.jsonl", got)
		if (err == nil) != (tt.refusal == "") || (err != nil && !strings.Contains(err.Error(), tt.refusal)) {
			t.Errorf("CheckTrainRows(split %q) = %v, want %q", tt.split, err, tt.refusal)
		}
	}
	many := make([]Prompt, 7)
	for i := range many {
		many[i] = Prompt{ID: fmt.Sprintf("e%d", i), Split: SplitEval}
	}
	if err := CheckTrainRows("x", many); err == nil || !strings.Contains(err.Error(), "7 rows are in split eval (ids e0, e1, e2, e3, e4, …)") {
		t.Errorf("CheckTrainRows(7 eval rows) = %v", err)
	}
}

// TestRequireScenario: for a game whose rows are structured, a row without
// a scenario is an error naming the file, the line and the field.
func TestRequireScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	rows := `{"id":"r1","category":"open_ended","task":"Plan a trip.","scenario":"{\"x\":1}"}` + "\n" +
		`{"id":"r2","category":"open_ended","task":"Plan a party."}` + "\n"
	if err := os.WriteFile(path, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrompts(path, LoadOptions{}); err != nil {
		t.Errorf("without RequireScenario: %v", err)
	}
	_, err := LoadPrompts(path, LoadOptions{RequireScenario: true})
	if err == nil || !strings.Contains(err.Error(), path+":2: field scenario: empty") {
		t.Errorf("LoadPrompts with RequireScenario = %v, want an error naming %s:2 and field scenario", err, path)
	}
	err = ValidatePrompts([]Prompt{{ID: "a", Category: CategoryOpenEnded, Task: "t"}}, LoadOptions{RequireScenario: true})
	if err == nil || !strings.Contains(err.Error(), "field scenario") {
		t.Errorf("ValidatePrompts with RequireScenario = %v, want an error naming field scenario", err)
	}
}

// TestLoadPromptsCheck: a game's row check runs as the curriculum is
// loaded, and its error names the file, the line and the field.
func TestLoadPromptsCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	rows := `{"id":"r1","category":"open_ended","task":"Plan a trip.","scenario":"good"}` + "\n" +
		`{"id":"r2","category":"open_ended","task":"Plan a party.","scenario":"bad"}` + "\n"
	if err := os.WriteFile(path, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(p Prompt) error {
		if p.Scenario != "good" {
			return fmt.Errorf("prompt %s: scenario %q is not good", p.ID, p.Scenario)
		}
		return nil
	}
	_, err := LoadPrompts(path, LoadOptions{RequireScenario: true, Check: check})
	if want := path + `:2: field scenario: prompt r2: scenario "bad" is not good`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("LoadPrompts with a check = %v, want %q", err, want)
	}
}
