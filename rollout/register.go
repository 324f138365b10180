package rollout

import (
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
)

// Definition is a game as it registers itself (Register): its Spec with
// the hooks that read its config section typed over the section's type C,
// so that a game never asserts its section back from any. A game without
// settings uses NoSettings for C and leaves Config nil.
type Definition[C any] struct {
	// Name is the game's env name (Spec.Name).
	Name string
	// Config returns a new section holding the game's defaults; its keys
	// are game.<Name>.<key>, and a Validate() error method on *C is called
	// by config validation. Nil means the game has no settings: the hooks
	// then get a pointer to C's zero value.
	Config func() *C
	// New builds the game from its section and the shared settings.
	// Required.
	New func(section *C, shared Shared) (Game, error)
	// Scorer, if set, builds the game's own scorer (Spec.Scorer).
	Scorer func(section *C) (reward.Judge, error)
	// Series, if set, lays out series of a SeriesGame (Spec.Series).
	Series func(section *C, prompts []dataset.Prompt, n int, seed int64) ([]Series, error)
	// Curriculum says what the game's prompt rows need.
	Curriculum Curriculum
	// Traits and Hooks are the Spec's, as they are.
	Traits
	Hooks
}

// NoSettings is the section type of a game without settings.
type NoSettings struct{}

// Register adds game d to the registry, as the Spec whose section hooks
// assert the section to *C (SectionOf) and hand it to d's typed ones: a
// section of another type is an error naming the game, never a panic. It
// panics on an empty or duplicate name, a missing New, or a bundled
// curriculum name another game or package dataset already uses: a
// registration is a program's wiring, checked at start.
func Register[C any](d Definition[C]) {
	register(d.Spec())
}

// Spec returns the Spec d registers as (Register).
func (d Definition[C]) Spec() Spec {
	s := Spec{Name: d.Name, Curriculum: d.Curriculum, Traits: d.Traits, Hooks: d.Hooks}
	section := func(v any) (*C, error) {
		if v == nil {
			if d.Config != nil {
				return d.Config(), nil
			}
			return new(C), nil
		}
		c, err := SectionOf[C](v)
		if err != nil {
			return nil, fmt.Errorf("game %s: %w", d.Name, err)
		}
		return c, nil
	}
	if d.Config != nil {
		s.Config = func() any { return d.Config() }
	}
	if d.New != nil {
		s.New = func(v any, shared Shared) (Game, error) {
			c, err := section(v)
			if err != nil {
				return nil, err
			}
			return d.New(c, shared)
		}
	}
	if d.Scorer != nil {
		s.Scorer = func(v any) (reward.Judge, error) {
			c, err := section(v)
			if err != nil {
				return nil, err
			}
			return d.Scorer(c)
		}
	}
	if d.Series != nil {
		s.Series = func(v any, prompts []dataset.Prompt, n int, seed int64) ([]Series, error) {
			c, err := section(v)
			if err != nil {
				return nil, err
			}
			return d.Series(c, prompts, n, seed)
		}
	}
	return s
}

// SectionOf returns a game's section, held as any by the config and the
// tournament file (Spec.Config's value, TournamentReport.Section), as the
// game's section type *C. It is the one place a section is asserted back:
// anything but a non-nil *C is an error naming both types.
func SectionOf[C any](section any) (*C, error) {
	c, ok := section.(*C)
	if !ok || c == nil {
		return nil, fmt.Errorf("the game's section is %T, want %T", section, c)
	}
	return c, nil
}
