// Package layers states the package layers of this module, bottom first
// (README's Layout), and checks the module's import graph against them,
// for the test that keeps the drawing of the layout free of arrows running
// up:
//
//   - a package imports packages of its own layer or of the layers below,
//     never of one above;
//   - every package of the module has a layer;
//   - a game's packages are imported only from within the game's folder
//     and by Registrar: a new game is its folder and one line there, and
//     no other package (cmd/parley, app, sim) names a game. A game is a
//     package Registrar imports (and every package below it), or one of
//     Games;
//   - no package imports a test helper unless it is one.
//
// A test helper is a package whose non-test files import "testing"
// (internal/golden, llm/contract): it may import any layer, as tests may.
// Test files are not part of the graph.
package layers

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Layer is one layer of the module.
type Layer struct {
	// Name says what the layer holds.
	Name string
	// Pkgs are its packages, as paths relative to the module ("config");
	// "x/..." is x and every package below it. A package belongs to the
	// layer of its longest match, so a leaf filed inside a higher folder
	// (eval/tournament/schedule) is placed by its own entry.
	Pkgs []string
}

// Module is this module's layers, bottom first, as README's Layout lists
// them (TestReadmeLayers compares the two). The order is the one
// `go list` shows, not an aspiration: config validates a game's section
// through rollout's registry and judge kinds through reward, so it sits
// above the games; league, train, eval, app and cmd/parley sit above it,
// and it imports none of them (nor, through them, any plotting).
var Module = []Layer{
	{"leaf libraries", []string{
		"internal/...", "metrics/...", "stats/...", "figure/...",
		// Names config validates, owned by packages above it.
		"league/draw", "eval/tournament/schedule",
	}},
	{"inference clients", []string{"llm/...", "internal/telemetry"}},
	{"serve-sim", []string{"sim/..."}},
	{"data", []string{"dataset/..."}},
	{"judges, advantages, curricula", []string{"reward/...", "grpo/...", "curriculum/..."}},
	{"games", []string{"rollout/...", "internal/toygame"}},
	{"config", []string{"config/..."}},
	{"league, handshake", []string{"league/...", "handshake/..."}},
	{"training loop", []string{"train/..."}},
	{"evaluation", []string{"eval/..."}},
	{"viewer", []string{"view/..."}},
	{"composition root", []string{"app/..."}},
	{"binary", []string{"cmd/parley/..."}},
}

// Games are the games Registrar does not import: internal/toygame, which
// the tests register themselves.
var Games = []string{"internal/toygame"}

// Registrar is the one package that imports the games, to register them.
const Registrar = "rollout/games"

// Package is one package of the graph.
type Package struct {
	// Path is relative to the module ("rollout/games").
	Path string
	// Imports are its non-test imports: the module's own relative to it,
	// others (the standard library's, other modules') as they are.
	Imports []string
	// Own reports which of Imports are the module's.
	Own map[string]bool
}

// Load lists the packages of the module in dir with `go list`, their
// build-context files only (no test files).
func Load(dir string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("layers.Load: go list: %w: %s", err, stderr.Bytes())
	}
	var pkgs []Package
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("layers.Load: go list printed %q", line)
		}
		mod := f[0]
		p := Package{Path: relative(mod, f[1]), Own: map[string]bool{}}
		for _, imp := range f[2:] {
			if r := relative(mod, imp); r != imp {
				p.Own[r] = true
				imp = r
			}
			p.Imports = append(p.Imports, imp)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// relative returns path relative to module mod ("." for mod itself), or
// path unchanged when it is not mod's.
func relative(mod, path string) string {
	if path == mod {
		return "."
	}
	if r, ok := strings.CutPrefix(path, mod+"/"); ok {
		return r
	}
	return path
}

// Rules a Violation breaks.
const (
	Upward   = "upward"   // an import of a higher layer
	Unplaced = "unplaced" // a package in no layer
	Game     = "game"     // a game imported outside its folder but by Registrar
	Helper   = "helper"   // a test helper imported by a package that is not one
)

// Violation is one import (or, Unplaced, one package) that breaks a rule.
type Violation struct {
	// From imports To (To is empty for Unplaced).
	From, To string
	// Rule is Upward, Unplaced, Game or Helper; Why says it in words.
	Rule, Why string
}

func (v Violation) String() string {
	if v.To == "" {
		return fmt.Sprintf("%s: %s", v.From, v.Why)
	}
	return fmt.Sprintf("%s → %s: %s", v.From, v.To, v.Why)
}

// Check returns the violations of pkgs against layers, the games (those
// registrar imports, and games) and registrar (Module, Games, Registrar
// for this module), sorted.
func Check(layers []Layer, games []string, registrar string, pkgs []Package) []Violation {
	helpers := map[string]bool{}
	folders := slices.Clone(games)
	for _, p := range pkgs {
		helpers[p.Path] = slices.Contains(p.Imports, "testing")
		if p.Path == registrar {
			for _, imp := range p.Imports {
				if p.Own[imp] {
					folders = append(folders, imp)
				}
			}
		}
	}
	var vs []Violation
	for _, p := range pkgs {
		from, ok := LayerOf(layers, p.Path)
		if !ok {
			vs = append(vs, Violation{From: p.Path, Rule: Unplaced,
				Why: "in no layer: add it to the layer it belongs to (internal/layers.Module)"})
		}
		for _, imp := range p.Imports {
			if !p.Own[imp] || helpers[p.Path] {
				continue
			}
			if helpers[imp] {
				vs = append(vs, Violation{From: p.Path, To: imp, Rule: Helper,
					Why: imp + " is a test helper (it imports testing)"})
			}
			if g := GameOf(folders, imp); g != "" && p.Path != registrar && GameOf(folders, p.Path) != g {
				vs = append(vs, Violation{From: p.Path, To: imp, Rule: Game,
					Why: fmt.Sprintf("the game %s is imported only from its folder and by %s", g, registrar)})
			}
			if to, ok2 := LayerOf(layers, imp); ok && ok2 && to > from {
				vs = append(vs, Violation{From: p.Path, To: imp, Rule: Upward,
					Why: fmt.Sprintf("layer %d (%s) imports layer %d (%s)", from, layers[from].Name, to, layers[to].Name)})
			}
		}
	}
	slices.SortFunc(vs, func(a, b Violation) int {
		return strings.Compare(a.From+"\x00"+a.To+"\x00"+a.Rule, b.From+"\x00"+b.To+"\x00"+b.Rule)
	})
	return vs
}

// LayerOf returns the index of the layer of pkg (a path relative to the
// module): the layer of its longest match.
func LayerOf(layers []Layer, pkg string) (int, bool) {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, pat := range l.Pkgs {
			if n := match(pat, pkg); n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	return best, best >= 0
}

// match returns how long a match pattern pat is for pkg (the length of
// its fixed part), or -1 when it does not match.
func match(pat, pkg string) int {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		if pkg == base || strings.HasPrefix(pkg, base+"/") {
			return len(base)
		}
		return -1
	}
	if pkg == pat {
		return len(pat)
	}
	return -1
}

// GameOf returns the game folder (one of folders) that pkg belongs to,
// or "" when it is no game's.
func GameOf(folders []string, pkg string) string {
	best := ""
	for _, f := range folders {
		if (pkg == f || strings.HasPrefix(pkg, f+"/")) && len(f) > len(best) {
			best = f
		}
	}
	return best
}
