package single

import (
	_ "embed"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// builtinName is the bundled curriculum's name after dataset.BuiltinPrefix.
const builtinName = "open-ended"

// BuiltinCurriculum is the path of the bundled curriculum (the game's
// default and its evaluation set): 20 open-ended questions, 5 in split
// eval (curricula/sample-open-ended.jsonl, embedded).
const BuiltinCurriculum = dataset.BuiltinPrefix + builtinName

//go:embed curricula/sample-open-ended.jsonl
var sampleJSONL []byte

// curriculum is what the game's rows need, and its bundled curriculum.
var curriculum = rollout.Curriculum{
	Default:  BuiltinCurriculum,
	Builtins: map[string][]byte{builtinName: sampleJSONL},
}

// SampleCurriculum returns the bundled curriculum's rows
// (BuiltinCurriculum).
func SampleCurriculum() ([]dataset.Prompt, error) {
	ps, err := dataset.LoadPrompts(BuiltinCurriculum, dataset.LoadOptions{Builtins: curriculum.Builtins})
	if err != nil {
		return nil, fmt.Errorf("single.SampleCurriculum: %w", err)
	}
	return ps, nil
}
