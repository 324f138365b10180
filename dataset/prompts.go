package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/textfile"
	"github.com/parquet-go/parquet-go"
)

// promptRecord is a Prompt as curriculum files hold it: the columns id,
// category, task, persona_pair_id, persona_a, persona_b (and their short
// names persona_a_name, persona_b_name), split and scenario, and a
// personas list for roles other than A and B.
type promptRecord struct {
	ID            string    `json:"id" parquet:"id"`
	Category      string    `json:"category" parquet:"category"`
	Task          string    `json:"task" parquet:"task"`
	PersonaPairID string    `json:"persona_pair_id,omitempty" parquet:"persona_pair_id"`
	PersonaA      string    `json:"persona_a,omitempty" parquet:"persona_a"`
	PersonaB      string    `json:"persona_b,omitempty" parquet:"persona_b"`
	PersonaAName  string    `json:"persona_a_name,omitempty" parquet:"persona_a_name"`
	PersonaBName  string    `json:"persona_b_name,omitempty" parquet:"persona_b_name"`
	Personas      []Persona `json:"personas,omitempty" parquet:"personas,list"`
	Split         string    `json:"split,omitempty" parquet:"split"`
	Scenario      string    `json:"scenario,omitempty" parquet:"scenario"`
}

func (r promptRecord) prompt() Prompt {
	p := Prompt{ID: r.ID, Category: r.Category, Task: r.Task, PersonaPairID: r.PersonaPairID, Split: r.Split, Scenario: r.Scenario}
	if r.PersonaA != "" || r.PersonaB != "" {
		p.Personas = PersonaPair{A: r.PersonaA, B: r.PersonaB, NameA: r.PersonaAName, NameB: r.PersonaBName}.Personas()
	}
	p.Personas = append(p.Personas, r.Personas...)
	return p
}

func (p Prompt) record() promptRecord {
	r := promptRecord{ID: p.ID, Category: p.Category, Task: p.Task, PersonaPairID: p.PersonaPairID, Split: p.Split, Scenario: p.Scenario}
	for _, x := range p.Personas {
		switch x.Role {
		case "A":
			r.PersonaA, r.PersonaAName = x.Text, x.Name
		case "B":
			r.PersonaB, r.PersonaBName = x.Text, x.Name
		default:
			r.Personas = append(r.Personas, x)
		}
	}
	return r
}

// MarshalJSON writes the flat file form of a prompt (promptRecord).
func (p Prompt) MarshalJSON() ([]byte, error) { return json.Marshal(p.record()) }

// UnmarshalJSON reads the flat file form of a prompt, rejecting unknown
// fields.
func (p *Prompt) UnmarshalJSON(b []byte) error {
	var r promptRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return err
	}
	*p = r.prompt()
	return nil
}

// LoadOptions says how a curriculum is validated.
type LoadOptions struct {
	// RequirePersonas is set for the deliberation game: every prompt must
	// end up with two personas, given inline (persona_a, persona_b) or by
	// persona_pair_id. For single-agent use it is false and prompts without
	// personas are fine; personas that are given are still checked.
	RequirePersonas bool
	// Personas is the library persona_pair_id is resolved against; nil
	// means PersonaLibrary().
	Personas []PersonaPair
	// Categories are categories a game's rows may carry beyond Categories
	// (seed 001's endowment, seed 002's scenario types,
	// rollout.Curriculum.Categories).
	Categories []string
	// RequireScenario is set for games whose rows are structured (seed
	// 001, seed 002): every prompt must carry a scenario.
	RequireScenario bool
	// Builtins are the bundled curricula, by name without BuiltinPrefix:
	// the games' (rollout.Curriculum.Builtins, all of them in
	// rollout.Spec.LoadOptions), so that "builtin:<name>" loads one.
	Builtins map[string][]byte
	// Check, when set, validates a row's game payload (its scenario) after
	// the checks above: a game's rule (rollout.Curriculum.Check), so that a
	// bad row is an error naming the file and line when the curriculum is
	// loaded, not when the row is played.
	Check func(Prompt) error
}

// LoadPrompts reads and validates a curriculum. path is a JSON lines file
// (.jsonl, .ndjson or .json: one Prompt object a line, blank lines
// skipped), a parquet file (.parquet, columns named as the Prompt json
// tags, all strings), or a bundled curriculum, a game's in opts.Builtins
// ("builtin:dilemmas", "builtin:endowment"). Errors name the file and the
// line (JSONL, from 1) or row (parquet, from 0) and the field.
//
// A prompt gives its personas inline (persona_a and persona_b, with
// optional short names persona_a_name and persona_b_name) or by
// persona_pair_id, which is resolved against opts.Personas (names
// included) and filled in; when both are given the inline personas win and
// the id is kept as a label. A row without a split is in SplitTrain; rows
// of SplitEval are held out for evaluation.
func LoadPrompts(path string, opts LoadOptions) ([]Prompt, error) {
	prompts, err := loadPrompts(path, opts)
	if err != nil {
		return nil, fmt.Errorf("dataset.LoadPrompts: %w", err)
	}
	return prompts, nil
}

func loadPrompts(path string, opts LoadOptions) ([]Prompt, error) {
	v := newPromptValidator(opts)
	var prompts []Prompt
	builtin := func(name string) ([]byte, error) { return builtinCurriculum(name, opts.Builtins) }
	err := readRecords(path, builtin, promptColumns, func(loc string, r promptRecord) error {
		p := r.prompt()
		if err := v.check(loc, &p); err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
		prompts = append(prompts, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("%s: empty curriculum (no prompts)", path)
	}
	return prompts, nil
}

// ValidatePrompts checks an in-memory curriculum with the rules of
// LoadPrompts, resolving persona_pair_id in place. Errors name the prompt
// by index and id.
func ValidatePrompts(prompts []Prompt, opts LoadOptions) error {
	v := newPromptValidator(opts)
	if len(prompts) == 0 {
		return errors.New("dataset.ValidatePrompts: empty curriculum (no prompts)")
	}
	for i := range prompts {
		loc := fmt.Sprintf("prompt %d", i)
		if err := v.check(loc, &prompts[i]); err != nil {
			return fmt.Errorf("dataset.ValidatePrompts: %s (id %q): %w", loc, prompts[i].ID, err)
		}
	}
	return nil
}

// promptValidator checks prompts one by one, remembering ids.
type promptValidator struct {
	opts LoadOptions
	lib  map[string]PersonaPair
	seen map[string]string // id -> location of its first occurrence
}

func newPromptValidator(opts LoadOptions) *promptValidator {
	lib := opts.Personas
	if lib == nil {
		lib = PersonaLibrary()
	}
	byID := make(map[string]PersonaPair, len(lib))
	for _, p := range lib {
		byID[p.ID] = p
	}
	return &promptValidator{opts: opts, lib: byID, seen: map[string]string{}}
}

// check validates p, resolving its persona_pair_id in place.
func (v *promptValidator) check(loc string, p *Prompt) error {
	if strings.TrimSpace(p.ID) == "" {
		return errors.New("field id: empty")
	}
	if first, dup := v.seen[p.ID]; dup {
		return fmt.Errorf("field id: duplicate id %q (first at %s)", p.ID, first)
	}
	v.seen[p.ID] = loc
	if strings.TrimSpace(p.Task) == "" {
		return errors.New("field task: empty")
	}
	if p.Split == "" {
		p.Split = SplitTrain
	}
	if !validCategory(p.Category) && !slices.Contains(v.opts.Categories, p.Category) {
		return fmt.Errorf("field category: unknown category %q (want one of %s)", p.Category, strings.Join(append(slices.Clone(Categories), v.opts.Categories...), ", "))
	}
	if a, b := p.Persona("A"), p.Persona("B"); a != "" || b != "" {
		if err := checkPersonas("persona_a", "persona_b", a, b); err != nil {
			return err
		}
	} else if p.PersonaPairID != "" {
		pair, ok := v.lib[p.PersonaPairID]
		if !ok {
			return fmt.Errorf("field persona_pair_id: unknown persona pair %q", p.PersonaPairID)
		}
		if err := checkPersonas("persona_a", "persona_b", pair.A, pair.B); err != nil {
			return fmt.Errorf("persona pair %q: %w", pair.ID, err)
		}
		p.Personas = append(pair.Personas(), p.Personas...)
	} else if v.opts.RequirePersonas {
		return errors.New("fields persona_pair_id, persona_a, persona_b: no personas (the deliberation game needs persona_pair_id or persona_a and persona_b)")
	}
	if v.opts.RequireScenario && strings.TrimSpace(p.Scenario) == "" {
		return errors.New("field scenario: empty (the game plays structured rows: each needs its scenario)")
	}
	if v.opts.Check != nil {
		if err := v.opts.Check(*p); err != nil {
			return fmt.Errorf("field scenario: %w", err)
		}
	}
	return nil
}

// checkPersonas checks two given personas: neither empty nor whitespace,
// and not the same.
func checkPersonas(nameA, nameB, a, b string) error {
	if strings.TrimSpace(a) == "" {
		return fmt.Errorf("field %s: empty or whitespace persona", nameA)
	}
	if strings.TrimSpace(b) == "" {
		return fmt.Errorf("field %s: empty or whitespace persona", nameB)
	}
	if strings.TrimSpace(a) == strings.TrimSpace(b) {
		return fmt.Errorf("fields %s and %s: the two personas are identical", nameA, nameB)
	}
	return nil
}

func validCategory(c string) bool {
	for _, v := range Categories {
		if c == v {
			return true
		}
	}
	return false
}

// LoadPersonaPairs reads and validates a persona library: JSON lines or
// parquet of PersonaPair (id, a, b), or "builtin:personas" for the bundled
// library. Ids must be unique and non-empty; both personas non-blank and
// different.
func LoadPersonaPairs(path string) ([]PersonaPair, error) {
	pairs, err := loadPersonaPairs(path)
	if err != nil {
		return nil, fmt.Errorf("dataset.LoadPersonaPairs: %w", err)
	}
	return pairs, nil
}

func loadPersonaPairs(path string) ([]PersonaPair, error) {
	if path == BuiltinPersonas {
		return PersonaLibrary(), nil
	}
	var pairs []PersonaPair
	seen := map[string]string{}
	err := readRecords(path, nil, pairColumns, func(loc string, p PersonaPair) error {
		if err := checkPair(p, seen, loc); err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
		pairs = append(pairs, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%s: empty persona library (no pairs)", path)
	}
	return pairs, nil
}

func checkPair(p PersonaPair, seen map[string]string, loc string) error {
	if strings.TrimSpace(p.ID) == "" {
		return errors.New("field id: empty")
	}
	if first, dup := seen[p.ID]; dup {
		return fmt.Errorf("field id: duplicate id %q (first at %s)", p.ID, first)
	}
	seen[p.ID] = loc
	return checkPersonas("a", "b", p.A, p.B)
}

// readRecords reads a table of T from path and calls fn with each record
// and its location ("file:line" for JSON lines, "file: row N" for
// parquet). A path with BuiltinPrefix is looked up with builtin.
func readRecords[T any](path string, builtin func(string) ([]byte, error), cols []columnSpec, fn func(loc string, v T) error) error {
	jsonl := func(line int, v T) error { return fn(fmt.Sprintf("%s:%d", path, line), v) }
	if name, ok := strings.CutPrefix(path, BuiltinPrefix); ok && builtin != nil {
		data, err := builtin(name)
		if err != nil {
			return err
		}
		return readJSONL(path, bytes.NewReader(data), jsonl)
	}
	format, err := formatOf(path)
	if err != nil {
		return err
	}
	if format == "parquet" {
		return readParquetTable(path, cols, func(row int, v T) error {
			return fn(fmt.Sprintf("%s: row %d", path, row), v)
		})
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readJSONL(path, f, jsonl)
}

// formatOf picks a file format by extension: "jsonl" or "parquet".
func formatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return "jsonl", nil
	case ".parquet":
		return "parquet", nil
	}
	return "", fmt.Errorf("%s: unknown file format %q (want .jsonl, .ndjson, .json or .parquet)", path, filepath.Ext(path))
}

// readJSONL decodes one T per non-blank line, rejecting unknown fields and
// trailing data, and calls fn with the 1-based line number.
func readJSONL[T any](name string, r io.Reader, fn func(line int, v T) error) error {
	br := textfile.NewReader(r, 64<<10)
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 {
			var v T
			dec := json.NewDecoder(bytes.NewReader(trimmed))
			dec.DisallowUnknownFields()
			if derr := dec.Decode(&v); derr != nil {
				msg := strings.TrimPrefix(derr.Error(), "json: ")
				if strings.HasPrefix(msg, "unknown field") {
					return fmt.Errorf("%s:%d: %s", name, line, msg)
				}
				return fmt.Errorf("%s:%d: malformed JSON: %s", name, line, msg)
			}
			if dec.InputOffset() != int64(len(trimmed)) {
				return fmt.Errorf("%s:%d: malformed JSON: extra data after the object", name, line)
			}
			if ferr := fn(line, v); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// columns of the curriculum tables; the first ones are required.
var (
	promptColumns = []columnSpec{
		{name: "id", types: []string{"string"}},
		{name: "category", types: []string{"string"}},
		{name: "task", types: []string{"string"}},
		{name: "persona_pair_id", types: []string{"string"}, optional: true},
		{name: "persona_a", types: []string{"string"}, optional: true},
		{name: "persona_b", types: []string{"string"}, optional: true},
		{name: "persona_a_name", types: []string{"string"}, optional: true},
		{name: "persona_b_name", types: []string{"string"}, optional: true},
		{name: "personas", types: []string{"list<struct<role:string,text:string>>", "list<struct<role:string,text:string,name:string>>"}, optional: true},
		{name: "split", types: []string{"string"}, optional: true},
		{name: "scenario", types: []string{"string"}, optional: true},
	}
	pairColumns = []columnSpec{
		{name: "id", types: []string{"string"}},
		{name: "a", types: []string{"string"}},
		{name: "b", types: []string{"string"}},
		{name: "name_a", types: []string{"string"}, optional: true},
		{name: "name_b", types: []string{"string"}, optional: true},
	}
)

// readParquetTable reads a small parquet table of T, after checking its
// columns strictly (unknown columns are errors), and calls fn per row
// with the 0-based row index.
func readParquetTable[T any](path string, cols []columnSpec, fn func(row int, v T) error) error {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkColumns(path, pf.Schema(), cols, true); err != nil {
		return err
	}
	r, err := newReader[T](pf)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	buf := make([]T, 128)
	row := 0
	for {
		n, err := readRows(r, buf)
		for i := 0; i < n; i++ {
			if ferr := fn(row, buf[i]); ferr != nil {
				return ferr
			}
			row++
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", path, row, err)
		}
		if n == 0 {
			return nil
		}
	}
}

// WritePromptsJSONL writes prompts as JSON lines, atomically.
func WritePromptsJSONL(path string, prompts []Prompt) error {
	if err := writeJSONL(path, records(prompts)); err != nil {
		return fmt.Errorf("dataset.WritePromptsJSONL: %w", err)
	}
	return nil
}

// WritePromptsParquet writes prompts as a zstd parquet table with the
// columns of the Prompt json tags, atomically.
func WritePromptsParquet(path string, prompts []Prompt) error {
	if err := writeParquetTable(path, records(prompts)); err != nil {
		return fmt.Errorf("dataset.WritePromptsParquet: %w", err)
	}
	return nil
}

func records(prompts []Prompt) []promptRecord {
	out := make([]promptRecord, len(prompts))
	for i, p := range prompts {
		out[i] = p.record()
	}
	return out
}

// WritePersonaPairsJSONL writes a persona library as JSON lines, atomically.
func WritePersonaPairsJSONL(path string, pairs []PersonaPair) error {
	if err := writeJSONL(path, pairs); err != nil {
		return fmt.Errorf("dataset.WritePersonaPairsJSONL: %w", err)
	}
	return nil
}

// WritePersonaPairsParquet writes a persona library as a zstd parquet
// table (id, a, b), atomically.
func WritePersonaPairsParquet(path string, pairs []PersonaPair) error {
	if err := writeParquetTable(path, pairs); err != nil {
		return fmt.Errorf("dataset.WritePersonaPairsParquet: %w", err)
	}
	return nil
}

func writeJSONL[T any](path string, rows []T) error {
	return fsutil.WriteWith(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for i := range rows {
			if err := enc.Encode(&rows[i]); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

func writeParquetTable[T any](path string, rows []T) error {
	return fsutil.WriteWith(path, 0o644, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[T](w, parquet.Compression(&parquet.Zstd))
		if _, err := pw.Write(rows); err != nil {
			return err
		}
		return pw.Close()
	})
}

// SelectSplit returns the prompts of split (SplitTrain, SplitEval; a row
// without a split is in SplitTrain), or every prompt when split is "". The
// input is not modified.
func SelectSplit(prompts []Prompt, split string) []Prompt {
	if split == "" {
		return prompts
	}
	var out []Prompt
	for _, p := range prompts {
		s := p.Split
		if s == "" {
			s = SplitTrain
		}
		if s == split {
			out = append(out, p)
		}
	}
	return out
}

// CheckTrainRows refuses to train on held-out rows: an error naming the
// curriculum (path) and the rows of split eval among prompts, if any.
func CheckTrainRows(path string, prompts []Prompt) error {
	var held []string
	for _, p := range prompts {
		if p.Split == SplitEval {
			held = append(held, p.ID)
		}
	}
	if len(held) == 0 {
		return nil
	}
	shown := held
	if len(shown) > 5 {
		shown = append(slices.Clone(shown[:5]), "…")
	}
	n := fmt.Sprintf("%d rows are", len(held))
	if len(held) == 1 {
		n = "1 row is"
	}
	return fmt.Errorf("%s: %s in split %s (ids %s), held out for evaluation: training on them is refused",
		path, n, SplitEval, strings.Join(shown, ", "))
}

// CategoryDraw groups prompt rows by category for a draw weighted by
// category: by a mix's weights, or in proportion to the rows when the mix
// is empty or names none of their categories.
type CategoryDraw struct {
	// Cats are the categories, sorted; Rows the indexes of each one's rows.
	Cats []string
	Rows map[string][]int
	// Weights are the categories' weights, in Cats' order; Total their sum.
	Weights []float64
	Total   float64
}

// NewCategoryDraw groups prompts for a draw weighted by mix.
func NewCategoryDraw(prompts []Prompt, mix map[string]float64) CategoryDraw {
	d := CategoryDraw{Rows: map[string][]int{}}
	for i, p := range prompts {
		d.Rows[p.Category] = append(d.Rows[p.Category], i)
	}
	for c := range d.Rows {
		d.Cats = append(d.Cats, c)
	}
	sort.Strings(d.Cats)
	d.Weights = make([]float64, len(d.Cats))
	for i, c := range d.Cats {
		w := float64(len(d.Rows[c]))
		if len(mix) > 0 {
			w = mix[c]
		}
		d.Weights[i] = w
		d.Total += w
	}
	if d.Total <= 0 { // the mix names none of the rows' categories
		for i, c := range d.Cats {
			d.Weights[i] = float64(len(d.Rows[c]))
			d.Total += d.Weights[i]
		}
	}
	return d
}

// Pick is the category that u, uniform in [0, 1), falls in by weight.
func (d CategoryDraw) Pick(u float64) string {
	x := u * d.Total
	ci := 0
	for ci < len(d.Cats)-1 && x >= d.Weights[ci] {
		x -= d.Weights[ci]
		ci++
	}
	return d.Cats[ci]
}
