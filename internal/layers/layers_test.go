package layers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/pkgdoc"
)

// known are the imports that break the layers for now, each with the work
// that removes it; an entry that no longer occurs fails TestModuleLayers
// as stale. There are none: no arrow runs up.
var known []struct{ from, to, rule, slice string }

// moduleRoot returns the folder of the go.mod above the test's folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := pkgdoc.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestModuleLayers: no import of the module runs up a layer, every
// package has one, games are imported only by rollout/games, and test
// helpers only by test helpers; the known exceptions aside, each listed
// with the slice that removes it.
func TestModuleLayers(t *testing.T) {
	pkgs, err := Load(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 30 || !slices.ContainsFunc(pkgs, func(p Package) bool { return p.Path == "config" }) {
		t.Fatalf("Load found %d packages, config not among them: not this module?", len(pkgs))
	}
	used := make([]bool, len(known))
	var bad []string
	for _, v := range Check(Module, Games, Registrar, pkgs) {
		i := slices.IndexFunc(known, func(k struct{ from, to, rule, slice string }) bool {
			return k.from == v.From && k.to == v.To && k.rule == v.Rule
		})
		if i >= 0 {
			used[i] = true
			t.Logf("known exception, removed by slice %s: %s", known[i].slice, v)
			continue
		}
		bad = append(bad, v.String())
	}
	if len(bad) > 0 {
		t.Errorf("imports that break the layers (README's Layout; internal/layers.Module):\n\t%s", strings.Join(bad, "\n\t"))
	}
	for i, k := range known {
		if !used[i] {
			t.Errorf("known exception %s → %s (%s, slice %s) no longer occurs: delete it from the allowlist", k.from, k.to, k.rule, k.slice)
		}
	}
}

// TestModuleLayersPatterns: every pattern of Module and Games names a
// package (or folder) that exists, so the table says nothing untrue.
func TestModuleLayersPatterns(t *testing.T) {
	pkgs, err := Load(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	matches := func(f func(string) bool) bool {
		return slices.ContainsFunc(pkgs, func(p Package) bool { return f(p.Path) })
	}
	for _, l := range Module {
		for _, pat := range l.Pkgs {
			if !matches(func(p string) bool { return match(pat, p) >= 0 }) {
				t.Errorf("layer %q: %q matches no package", l.Name, pat)
			}
		}
	}
	for _, g := range Games {
		if !matches(func(p string) bool { return p == g }) {
			t.Errorf("Games: %q is no package", g)
		}
	}
	if !matches(func(p string) bool { return p == Registrar }) {
		t.Errorf("Registrar %q is no package", Registrar)
	}
}

// TestReadmeLayers: README's Layout lists the layers of Module, in order,
// each with the same packages.
func TestReadmeLayers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readmeLayers(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, l := range Module {
		var pkgs []string
		for _, p := range l.Pkgs {
			pkgs = append(pkgs, strings.TrimSuffix(p, "/..."))
		}
		slices.Sort(pkgs)
		want = append(want, pkgs)
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("README's layers = %q,\nModule's = %q", got, want)
	}
}

// readmeLayers returns the packages (in backquotes, sorted) of each item of
// the numbered list that follows "The packages stand in layers" in readme.
func readmeLayers(readme string) ([][]string, error) {
	_, rest, ok := strings.Cut(readme, "The packages stand in layers")
	if !ok {
		return nil, fmt.Errorf("README has no paragraph \"The packages stand in layers\"")
	}
	var layers [][]string
	inList := false
	for line := range strings.Lines(rest) {
		line = strings.TrimSpace(line)
		n, item, ok := strings.Cut(line, ". ")
		if _, err := strconv.Atoi(n); !ok || err != nil {
			if inList {
				break
			}
			continue
		}
		inList = true
		var pkgs []string
		for i, part := range strings.Split(item, "`") {
			if i%2 == 1 {
				pkgs = append(pkgs, part)
			}
		}
		slices.Sort(pkgs)
		layers = append(layers, pkgs)
	}
	return layers, nil
}

func TestReadmeLayersParse(t *testing.T) {
	const readme = "x\nThe packages stand in layers, bottom first:\n\n1. leaf: `b`, `a`\n2. `c`\n\nThe end. 3. `d`\n"
	got, err := readmeLayers(readme)
	want := [][]string{{"a", "b"}, {"c"}}
	if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("readmeLayers = %q, %v, want %q", got, err, want)
	}
	if _, err := readmeLayers("no layers here"); err == nil {
		t.Error("readmeLayers of a README without the paragraph: no error")
	}
}

func TestLayerOf(t *testing.T) {
	layers := []Layer{
		{"leaf", []string{"internal/...", "eval/tournament/schedule"}},
		{"mid", []string{"internal/telemetry", "config/..."}},
		{"top", []string{"eval/..."}},
	}
	for _, tc := range []struct {
		pkg  string
		want int
		ok   bool
	}{
		{"internal", 0, true},
		{"internal/fsutil", 0, true},
		{"internal/telemetry", 1, true},
		{"internal/telemetryx", 0, true},
		{"config", 1, true},
		{"config/internal/keydocs", 1, true},
		{"configx", -1, false},
		{"eval/tournament", 2, true},
		{"eval/tournament/schedule", 0, true},
		{"eval/tournament/schedule/x", 2, true},
		{"app", -1, false},
	} {
		got, ok := LayerOf(layers, tc.pkg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LayerOf(%q) = %d, %v, want %d, %v", tc.pkg, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGameOf(t *testing.T) {
	folders := []string{"rollout/single", "rollout/multiparty", "internal/toygame"}
	for _, tc := range []struct{ pkg, want string }{
		{"rollout", ""},
		{"rollout/games", ""},
		{"rollout/gametest", ""},
		{"rollout/single", "rollout/single"},
		{"rollout/singles", ""},
		{"rollout/multiparty/scenario", "rollout/multiparty"},
		{"internal/toygame", "internal/toygame"},
		{"internal/toygamex", ""},
		{"cmd/parley", ""},
	} {
		if got := GameOf(folders, tc.pkg); got != tc.want {
			t.Errorf("GameOf(%q) = %q, want %q", tc.pkg, got, tc.want)
		}
	}
}

// pkg builds a Package from "path: import import ...", the module's
// imports bare and the others with a dot or none of the module's names.
func pkg(s string) Package {
	path, imps, _ := strings.Cut(s, ":")
	p := Package{Path: strings.TrimSpace(path), Own: map[string]bool{}}
	for _, imp := range strings.Fields(imps) {
		if imp != "testing" && imp != "fmt" && !strings.Contains(imp, ".") {
			p.Own[imp] = true
		}
		p.Imports = append(p.Imports, imp)
	}
	return p
}

func TestCheck(t *testing.T) {
	layers := []Layer{
		{"leaf", []string{"internal/...", "figure", "league/draw"}},
		{"games", []string{"rollout/...", "internal/toygame"}},
		{"config", []string{"config/..."}},
		{"league", []string{"league/..."}},
		{"top", []string{"app", "cmd/..."}},
	}
	games := []string{"internal/toygame"}
	for _, tc := range []struct {
		name  string
		pkgs  []string
		want  []string // From → To: Rule, or From: Rule
		rules []string
	}{
		{name: "downward and sideways",
			pkgs: []string{"figure: internal/fsutil fmt gonum.org/v1/plot", "internal/fsutil: fmt",
				"config: rollout league/draw", "rollout: figure", "league: league/draw figure config",
				"app: config league rollout/games", "rollout/games: rollout/single", "rollout/single: rollout",
				"cmd/parley: app"}},
		{name: "config imports league",
			pkgs: []string{"config: league", "league: figure", "figure:"},
			want: []string{"config → league: upward"}},
		{name: "leaf imports up",
			pkgs: []string{"internal/fsutil: config", "config:"},
			want: []string{"internal/fsutil → config: upward"}},
		{name: "unplaced",
			pkgs: []string{"export: internal/fsutil", "internal/fsutil:", "app: export"},
			want: []string{"export: unplaced"}},
		{name: "cmd imports a game",
			pkgs: []string{"cmd/parley: rollout/endowment rollout/multiparty/scenario rollout/games",
				"rollout/endowment:", "rollout/multiparty: rollout/multiparty/scenario", "rollout/multiparty/scenario:",
				"rollout/games: rollout/endowment rollout/multiparty"},
			want: []string{"cmd/parley → rollout/endowment: game", "cmd/parley → rollout/multiparty/scenario: game"}},
		{name: "a game imports another, and within itself",
			pkgs: []string{"rollout/endowment: rollout/single rollout", "rollout/single:", "rollout:",
				"rollout/multiparty: rollout/multiparty/scenario", "rollout/multiparty/scenario:",
				"app: internal/toygame", "internal/toygame: rollout",
				"rollout/games: rollout/endowment rollout/single rollout/multiparty"},
			want: []string{"app → internal/toygame: game", "rollout/endowment → rollout/single: game"}},
		{name: "games share a package of rollout that is no game",
			pkgs: []string{"rollout/games: rollout/single rollout/endowment", "rollout/single: rollout/register",
				"rollout/endowment: rollout/register rollout", "rollout/register: rollout", "rollout:"}},
		{name: "test helpers import anything, only helpers import them",
			pkgs: []string{"internal/golden: testing app rollout/single", "app: fmt", "rollout/single:",
				"rollout/gametest: testing internal/golden rollout/games", "rollout/games: rollout/single",
				"config: internal/golden"},
			want: []string{"config → internal/golden: helper"}},
		{name: "a game importing a helper up a layer",
			pkgs: []string{"rollout/single: app", "app: testing"},
			want: []string{"rollout/single → app: helper", "rollout/single → app: upward"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pkgs []Package
			for _, s := range tc.pkgs {
				pkgs = append(pkgs, pkg(s))
			}
			var got []string
			for _, v := range Check(layers, games, "rollout/games", pkgs) {
				if v.To == "" {
					got = append(got, v.From+": "+v.Rule)
				} else {
					got = append(got, v.From+" → "+v.To+": "+v.Rule)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRelative(t *testing.T) {
	const mod = "github.com/parleyhq/parley"
	for _, tc := range []struct{ path, want string }{
		{mod, "."},
		{mod + "/config", "config"},
		{mod + "x/config", mod + "x/config"},
		{"gonum.org/v1/plot", "gonum.org/v1/plot"},
		{"fmt", "fmt"},
	} {
		if got := relative(mod, tc.path); got != tc.want {
			t.Errorf("relative(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
