package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/parleyhq/parley/rollout"
	"gopkg.in/yaml.v3"
)

// Game selects the environment and holds each registered game's section.
// In YAML:
//
//	game:
//	  env: deliberation
//	  deliberation:        # game.deliberation.<key>: that game's settings
//	    max_rounds: 5
//
// The sections are the games' own types (rollout.Spec.Config), found
// through the game registry: a new game adds its keys here without a
// change to this package.
type Game struct {
	// Env is the game (a registered name: deliberation, single, …).
	Env string `yaml:"env"`
	// Sections maps every registered game's name to its section (a
	// pointer to the game's config struct). Copies of a Config share the
	// sections; Section returns them.
	Sections map[string]any `yaml:"-"`
}

// movedGameKeys are keys of the game section before games had their own
// sections, with where they went.
var movedGameKeys = map[string]string{
	"max_rounds":       "game.deliberation.max_rounds",
	"agreement_marker": "game.deliberation.agreement_marker",
}

// defaultGame is the game section with every registered game's defaults.
func defaultGame(env string) Game {
	g := Game{Env: env, Sections: map[string]any{}}
	for _, s := range rollout.Games() {
		if s.Config != nil {
			g.Sections[s.Name] = s.Config()
		}
	}
	return g
}

// Section returns the section of game name (nil when the game has none).
func (g Game) Section(name string) any { return g.Sections[name] }

// Active returns the section of the configured game.
func (g Game) Active() any { return g.Sections[g.Env] }

// UnmarshalYAML decodes env and each game's section into the section's
// own type. Unknown keys were already reported with their line by
// checkKeys.
func (g *Game) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: game must be a mapping", n.Line)
	}
	if g.Sections == nil {
		*g = defaultGame(g.Env)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "env" {
			if err := v.Decode(&g.Env); err != nil {
				return err
			}
			continue
		}
		sec, ok := g.Sections[k.Value]
		if !ok {
			return fmt.Errorf("line %d: unknown key %q", k.Line, "game."+k.Value)
		}
		if err := v.Decode(sec); err != nil {
			return err
		}
	}
	return nil
}

// MarshalYAML writes env and the configured game's section (the others
// hold defaults and change nothing).
func (g Game) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) error {
		var val yaml.Node
		if err := val.Encode(v); err != nil {
			return err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &val)
		return nil
	}
	if err := add("env", g.Env); err != nil {
		return nil, err
	}
	if sec, ok := g.Sections[g.Env]; ok {
		if err := add(g.Env, sec); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// gameKeys checks the keys of the game mapping: env and one section per
// registered game, each against its type.
func gameKeys(n *yaml.Node, g Game) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "env" {
			continue
		}
		sec, ok := g.Sections[k.Value]
		if !ok {
			known := []string{"env"}
			for name := range g.Sections {
				known = append(known, name)
			}
			sort.Strings(known)
			if to, moved := movedGameKeys[k.Value]; moved {
				return fmt.Errorf("line %d: key %q moved to %s", k.Line, "game."+k.Value, to)
			}
			return fmt.Errorf("line %d: unknown key %q (known keys here: %s; games: %s)", k.Line, "game."+k.Value,
				strings.Join(known, ", "), strings.Join(rollout.GameNames(), ", "))
		}
		if err := checkKeys(v, reflect.TypeOf(sec).Elem(), "game."+k.Value); err != nil {
			return err
		}
	}
	return nil
}

// sectionNames are the names of the game sections, sorted.
func (g Game) sectionNames() []string {
	names := make([]string, 0, len(g.Sections))
	for name := range g.Sections {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// gameLeaves lists every game section's leaf keys.
func gameLeaves(g Game, out []leaf) []leaf {
	for _, name := range g.sectionNames() {
		out = leaves(reflect.ValueOf(g.Sections[name]).Elem(), "game."+name, out)
	}
	return out
}
