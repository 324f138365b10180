package dataset

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// BuiltinPrefix marks a path that names a bundled file rather than one on
// disk: "builtin:personas" for LoadPersonaPairs, and a game's bundled
// curriculum for LoadPrompts ("builtin:dilemmas" is the deliberation
// game's, "builtin:open-ended" the single-agent game's; each game embeds
// its own and hands them over in LoadOptions.Builtins). Configs may use
// these paths.
const BuiltinPrefix = "builtin:"

// BuiltinPersonas is the path of the bundled persona library.
const BuiltinPersonas = BuiltinPrefix + "personas"

//go:embed personas/library.jsonl
var libraryJSONL []byte

var library = sync.OnceValues(func() ([]PersonaPair, error) {
	var pairs []PersonaPair
	seen := map[string]string{}
	err := readJSONL(BuiltinPersonas, bytes.NewReader(libraryJSONL), func(line int, p PersonaPair) error {
		loc := fmt.Sprintf("%s:%d", BuiltinPersonas, line)
		if err := checkPair(p, seen, loc); err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
		pairs = append(pairs, p)
		return nil
	})
	return pairs, err
})

// PersonaLibrary returns the bundled library of 25 opposed persona pairs,
// ids "p01" to "p25": pairs 1–6 are seed 000's Table 6, the rest are
// written in the same style, one tension of values each. The caller owns
// the returned slice.
func PersonaLibrary() []PersonaPair {
	pairs, err := library()
	if err != nil {
		// The library is embedded and checked by the tests.
		panic("dataset: invalid embedded persona library: " + err.Error())
	}
	return slices.Clone(pairs)
}

// builtinCurriculum returns the bytes of the bundled curriculum name: one
// of the games' (LoadOptions.Builtins).
func builtinCurriculum(name string, builtins map[string][]byte) ([]byte, error) {
	if b, ok := builtins[name]; ok {
		return b, nil
	}
	var known []string
	for _, n := range slices.Sorted(maps.Keys(builtins)) {
		known = append(known, BuiltinPrefix+n)
	}
	return nil, fmt.Errorf("unknown builtin curriculum %q (want %s)", BuiltinPrefix+name, strings.Join(known, ", "))
}
