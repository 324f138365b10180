package scenario

import (
	_ "embed"

	"github.com/parleyhq/parley/dataset"
)

// The committed scenario sets (sets/*.jsonl, embedded; FixedSetSeed):
// builtin:2hb2g and builtin:1hb3g hold the 20 scenarios of one type,
// builtin:multiparty (BuiltinAll) both, 2HB+2G first. LoadSet, and any
// curriculum through the game registry (rollout.Curriculum.Builtins),
// loads them by these names.
var (
	//go:embed sets/2hb2g.jsonl
	set2HB2G []byte
	//go:embed sets/1hb3g.jsonl
	set1HB3G []byte
	//go:embed sets/both.jsonl
	setBoth []byte
)

// BuiltinAll is the name of the bundled set of both types, after
// dataset.BuiltinPrefix.
const BuiltinAll = "multiparty"

// Builtins returns the bundled scenario sets by name (without
// dataset.BuiltinPrefix): each type's, and BuiltinAll.
func Builtins() map[string][]byte {
	return map[string][]byte{Type2HB2G: set2HB2G, Type1HB3G: set1HB3G, BuiltinAll: setBoth}
}

// loadOptions are the options a scenario curriculum is loaded with: each
// row's scenario is parsed and validated as it is read, so that a bad one
// is an error naming the file and line.
func loadOptions() dataset.LoadOptions {
	return dataset.LoadOptions{Categories: Types, RequireScenario: true, Builtins: Builtins(),
		Check: func(p dataset.Prompt) error {
			_, err := FromPrompt(p)
			return err
		}}
}
