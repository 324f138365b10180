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
// disk: "builtin:dilemmas" and "builtin:open-ended" for LoadPrompts (and
// the games' own curricula, LoadOptions.Builtins), "builtin:personas" for
// LoadPersonaPairs. Configs may use these paths.
const BuiltinPrefix = "builtin:"

// BuiltinPersonas is the path of the bundled persona library.
const BuiltinPersonas = BuiltinPrefix + "personas"

// Names of the bundled sample curricula.
const (
	SampleDilemmas  = "dilemmas"   // 40 dilemmas, 12/16/12 professional/interpersonal/micro_ethics, persona pairs p01…p25 cycled; 10 (3/4/3) in split eval
	SampleOpenEnded = "open-ended" // 20 open-ended questions for the single-agent baseline; 5 in split eval
)

var (
	//go:embed personas/library.jsonl
	libraryJSONL []byte
	//go:embed curricula/sample-dilemmas.jsonl
	dilemmasJSONL []byte
	//go:embed curricula/sample-open-ended.jsonl
	openEndedJSONL []byte
)

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

// SampleCurricula lists the names SampleCurriculum accepts: the curricula
// bundled with this package (games bundle their own, LoadOptions.Builtins).
func SampleCurricula() []string { return []string{SampleDilemmas, SampleOpenEnded} }

// SampleCurriculum returns a bundled curriculum by name: "dilemmas" (40
// dilemmas in the 30/40/30 category mix, each with a persona pair from
// PersonaLibrary, resolved) or "open-ended" (20 open-ended questions).
func SampleCurriculum(name string) ([]Prompt, error) {
	opts := LoadOptions{RequirePersonas: name == SampleDilemmas}
	prompts, err := loadPrompts(BuiltinPrefix+name, opts)
	if err != nil {
		return nil, fmt.Errorf("dataset.SampleCurriculum: %w", err)
	}
	return prompts, nil
}

// builtinCurriculum returns the bytes of the bundled curriculum name: this
// package's, else one of extra (a game's, LoadOptions.Builtins).
func builtinCurriculum(name string, extra map[string][]byte) ([]byte, error) {
	switch name {
	case SampleDilemmas:
		return dilemmasJSONL, nil
	case SampleOpenEnded:
		return openEndedJSONL, nil
	}
	if b, ok := extra[name]; ok {
		return b, nil
	}
	var known []string
	for _, n := range append(SampleCurricula(), slices.Sorted(maps.Keys(extra))...) {
		known = append(known, BuiltinPrefix+n)
	}
	return nil, fmt.Errorf("unknown builtin curriculum %q (want %s)", BuiltinPrefix+name, strings.Join(known, ", "))
}
