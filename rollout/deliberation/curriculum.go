package deliberation

import (
	_ "embed"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// builtinName is the bundled curriculum's name after dataset.BuiltinPrefix.
const builtinName = "dilemmas"

// BuiltinCurriculum is the path of the bundled curriculum (the game's
// default and its evaluation set): 40 dilemmas, 12/16/12
// professional/interpersonal/micro_ethics in the 30/40/30 mix, persona
// pairs p01…p25 of dataset.PersonaLibrary cycled, 10 (3/4/3) in split eval
// (curricula/sample-dilemmas.jsonl, embedded).
const BuiltinCurriculum = dataset.BuiltinPrefix + builtinName

//go:embed curricula/sample-dilemmas.jsonl
var sampleJSONL []byte

// curriculum is what the game's rows need, and its bundled curriculum.
var curriculum = rollout.Curriculum{
	Default:         BuiltinCurriculum,
	RequirePersonas: true,
	Builtins:        map[string][]byte{builtinName: sampleJSONL},
}

// SampleCurriculum returns the bundled curriculum's rows
// (BuiltinCurriculum), their personas resolved.
func SampleCurriculum() ([]dataset.Prompt, error) {
	ps, err := dataset.LoadPrompts(BuiltinCurriculum, dataset.LoadOptions{
		RequirePersonas: curriculum.RequirePersonas, Builtins: curriculum.Builtins})
	if err != nil {
		return nil, fmt.Errorf("deliberation.SampleCurriculum: %w", err)
	}
	return ps, nil
}
