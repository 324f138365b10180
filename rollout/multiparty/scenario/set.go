package scenario

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/dataset"
)

// ToPrompt makes s a curriculum row: id, category (the scenario type),
// task (title and description) and the scenario as JSON.
func ToPrompt(s *Scenario) (dataset.Prompt, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return dataset.Prompt{}, fmt.Errorf("scenario.ToPrompt %s: %w", s.ID, err)
	}
	return dataset.Prompt{ID: s.ID, Category: s.Type, Task: s.Title + ": " + s.Description, Scenario: string(b)}, nil
}

// FromPrompt parses and validates the scenario of a curriculum row; the
// row's id and category must match it.
func FromPrompt(p dataset.Prompt) (*Scenario, error) {
	if p.Scenario == "" {
		return nil, fmt.Errorf("scenario.FromPrompt: prompt %s carries no scenario", p.ID)
	}
	s, err := Parse([]byte(p.Scenario))
	if err != nil {
		return nil, fmt.Errorf("scenario.FromPrompt: prompt %s: %w", p.ID, err)
	}
	if s.ID != p.ID {
		return nil, fmt.Errorf("scenario.FromPrompt: prompt %s holds scenario %q", p.ID, s.ID)
	}
	if p.Category != "" && p.Category != s.Type {
		return nil, fmt.Errorf("scenario.FromPrompt: prompt %s: category %q, but the scenario is of type %q", p.ID, p.Category, s.Type)
	}
	return s, nil
}

// WriteSet writes scenarios as a curriculum (JSON lines), atomically.
func WriteSet(path string, set []*Scenario) error {
	prompts := make([]dataset.Prompt, len(set))
	for i, s := range set {
		p, err := ToPrompt(s)
		if err != nil {
			return fmt.Errorf("scenario.WriteSet: %w", err)
		}
		prompts[i] = p
	}
	if err := dataset.WritePromptsJSONL(path, prompts); err != nil {
		return fmt.Errorf("scenario.WriteSet: %w", err)
	}
	return nil
}

// LoadSet reads a scenario curriculum (JSON lines or parquet, or a bundled
// set: builtin:2hb2g, builtin:1hb3g, builtin:multiparty) and parses and
// validates every scenario; the first bad one is an error naming it.
func LoadSet(path string) ([]*Scenario, error) {
	prompts, err := dataset.LoadPrompts(path, loadOptions())
	if err != nil {
		return nil, fmt.Errorf("scenario.LoadSet: %w", err)
	}
	out := make([]*Scenario, len(prompts))
	for i, p := range prompts {
		s, err := FromPrompt(p)
		if err != nil {
			return nil, fmt.Errorf("scenario.LoadSet: %s: %w", path, err)
		}
		out[i] = s
	}
	return out, nil
}

// GenerateSet generates a set (Generate) and writes it to path (WriteSet),
// returning its properties per type. opts.Type may list several types,
// comma separated: each gets opts.N scenarios, in the order given, the
// same as when generated alone.
func GenerateSet(path string, opts GenerateOptions) ([]SetProperties, error) {
	var all []*Scenario
	var props []SetProperties
	for _, typ := range strings.Split(opts.Type, ",") {
		o := opts
		o.Type = strings.TrimSpace(typ)
		set, err := Generate(o)
		if err != nil {
			return nil, err
		}
		all = append(all, set...)
		props = append(props, Summarize(set))
	}
	if err := WriteSet(path, all); err != nil {
		return nil, err
	}
	return props, nil
}

// ReportSets loads scenario sets and renders their properties as the
// seed's table 5 (one column per file).
func ReportSets(paths []string) (string, []SetProperties, error) {
	var sps []SetProperties
	for _, p := range paths {
		set, err := LoadSet(p)
		if err != nil {
			return "", nil, err
		}
		sps = append(sps, Summarize(set))
	}
	return PropertiesTable(sps), sps, nil
}
