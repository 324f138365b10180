package endowment

import (
	_ "embed"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// Category is the category of the game's curriculum rows.
const Category = "endowment"

// builtinName is the bundled curriculum's name after dataset.BuiltinPrefix.
const builtinName = "endowment"

// BuiltinCurriculum is the path of the bundled curriculum (the game's
// default): 12 scenarios, 6 causes each in the singular and the group
// framing (curricula/sample-endowment.jsonl, embedded).
const BuiltinCurriculum = dataset.BuiltinPrefix + builtinName

//go:embed curricula/sample-endowment.jsonl
var sampleJSONL []byte

// curriculum is what the game's rows need, and its bundled curriculum.
var curriculum = rollout.Curriculum{
	Default:         BuiltinCurriculum,
	RequireScenario: true,
	Categories:      []string{Category},
	Builtins:        map[string][]byte{builtinName: sampleJSONL},
}

// SampleCurriculum returns the bundled curriculum's rows
// (BuiltinCurriculum).
func SampleCurriculum() ([]dataset.Prompt, error) {
	ps, err := dataset.LoadPrompts(BuiltinCurriculum, dataset.LoadOptions{
		RequireScenario: curriculum.RequireScenario, Categories: curriculum.Categories, Builtins: curriculum.Builtins})
	if err != nil {
		return nil, fmt.Errorf("endowment.SampleCurriculum: %w", err)
	}
	return ps, nil
}
