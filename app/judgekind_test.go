package app

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/internal/pkgdoc"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// kindBuilder is the one function allowed to compare judge kinds: the
// builder switch, as "package-folder.function".
const kindBuilder = "app.newJudge"

// TestNewJudgeBuildsEveryKind: the builder switch has a case for every
// judge kind in reward's table, and a judge that knows its scale gives the
// scale config labels its scores with (reward.JudgeKind.Scale).
func TestNewJudgeBuildsEveryKind(t *testing.T) {
	bodies := map[reward.JudgeKind]string{
		reward.JudgeCA:     "judge:\n  kind: ca\n",
		reward.JudgeRule:   "judge:\n  kind: rule\n  rule:\n    kind: keyword_share\n    keywords: [we]\n    agreement_weight: 0.5\n",
		reward.JudgeGame:   "game:\n  env: endowment\njudge:\n  kind: game\n",
		reward.JudgePython: "judge:\n  kind: python\n  python:\n    function: parley_tools.rewards_example:keyword_length\n    min: -1\n    max: 2\n",
	}
	for _, k := range reward.JudgeKinds {
		t.Run(string(k), func(t *testing.T) {
			body, ok := bodies[k]
			if !ok {
				t.Fatalf("no config for judge kind %q: add one to this test", k)
			}
			if k.UsesPython() {
				body += "    interpreter: " + testPython(t) + "\n"
			}
			cfg, err := config.Load(writeYAML(t, body), nil)
			if err != nil {
				t.Fatal(err)
			}
			j, closeJudge, err := newJudge(cfg, "", nil, zap.NewNop())
			if err != nil {
				t.Fatalf("newJudge(kind %s) = %v", k, err)
			}
			defer closeJudge()
			if j == nil {
				t.Fatalf("newJudge(kind %s) = nil judge", k)
			}
			if s, ok := j.(reward.Scaler); ok && s.Scale() != cfg.ScoreScale() {
				t.Errorf("kind %s: judge's scale %+v, config's %+v", k, s.Scale(), cfg.ScoreScale())
			}
		})
	}
	cfg := config.Default()
	cfg.Judge.Kind = "llama"
	if _, _, err := newJudge(cfg, "", nil, zap.NewNop()); err == nil || !strings.Contains(err.Error(), `"llama"`) {
		t.Errorf("newJudge(kind llama) = %v, want an error naming the kind", err)
	}
}

// TestJudgeKindsComparedInOnePlace (issue 29, item 3): outside tests, only
// the builder switch compares judge kinds; everything else asks the kind
// (reward.JudgeKind's methods), so a new kind is its file, its entry in
// reward's table, its case in the builder, and tests.
func TestJudgeKindsComparedInOnePlace(t *testing.T) {
	root := moduleRoot(t)
	consts := judgeKindNames(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		hits, err := kindComparisons(filepath.ToSlash(rel), src, consts)
		found = append(found, hits...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("judge kinds compared outside %s (ask the kind instead: add what the call site asks to reward's kind table and a reward.JudgeKind method):\n\t%s",
			kindBuilder, strings.Join(found, "\n\t"))
	}
}

// TestKindComparisons: the scan finds each way of comparing a judge kind,
// and lets the builder switch and kinds merely named (a default, a table
// key) pass.
func TestKindComparisons(t *testing.T) {
	consts := map[string]bool{"JudgeCA": true, "JudgeRule": true}
	tests := []struct {
		name, file, body string
		want             int
	}{
		{"equal to a constant", "app/x.go", `func f() bool { return cfg.Judge.Kind == reward.JudgeCA }`, 1},
		{"not equal, constant first", "app/x.go", `func f() bool { return reward.JudgeRule != k }`, 1},
		{"a string literal", "config/x.go", `func (c Config) f() bool { return c.Judge.Kind == "ca" }`, 1},
		{"converted", "config/x.go", `func f() bool { return string(judge.Kind) != "rule" }`, 1},
		{"a switch on the kind", "config/x.go", `func f() { switch c.Judge.Kind { case "x": } }`, 1},
		{"a case naming a kind", "config/x.go", `func f() { switch k := kind(); k { case reward.JudgeCA, reward.JudgeRule: } }`, 1},
		{"a tagless switch", "config/x.go", `func f() { switch { case cfg.Judge.Kind == reward.JudgeCA: } }`, 1},
		{"in a func literal", "config/x.go", `var f = func() bool { return t.AuditJudge.Kind == reward.JudgeCA }`, 1},
		{"inside reward", "reward/x.go", `func f(k JudgeKind) bool { return k == JudgeCA }`, 1},
		{"the builder", "app/build.go", `func newJudge() { switch cfg.Judge.Kind { case reward.JudgeCA: }; _ = cfg.Judge.Kind == reward.JudgeRule }`, 0},
		{"a builder of the same name elsewhere", "cmd/parley/x.go", `func newJudge() { switch cfg.Judge.Kind { case reward.JudgeCA: } }`, 1},
		{"asking the kind", "app/x.go", `func f() bool { return cfg.Judge.Kind.UsesChat() }`, 0},
		{"a default", "config/x.go", `var d = Judge{Kind: reward.JudgeCA}`, 0},
		{"a table key", "app/x_test.go", `var m = map[reward.JudgeKind]string{reward.JudgeCA: "x"}`, 0},
		{"a rule's kind", "config/x.go", `func f() bool { return c.Judge.Rule.Kind == reward.RuleLength }`, 0},
		{"another kind", "app/x.go", `func f() bool { return rep.Kind != report.KindAgreement }`, 0},
	}
	for _, tt := range tests {
		src := "package p\n\n" + tt.body + "\n"
		got, err := kindComparisons(tt.file, []byte(src), consts)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(got) != tt.want {
			t.Errorf("%s: kindComparisons(%q) = %q, want %d", tt.name, tt.body, got, tt.want)
		}
	}
}

// kindComparisons returns "file:line: how" for each place in src (the
// file at rel, a slash path from the module root) that compares a judge
// kind outside kindBuilder: == or != with a judge kind on either side, or
// a switch on one or with a case naming a kind constant. A judge kind is
// a constant of consts (qualified by reward outside reward), or an
// expression ending in Judge.Kind (cfg.Judge.Kind, judge.Kind), possibly
// converted; a kind copied into a variable and compared with a string
// escapes the scan.
func kindComparisons(rel string, src []byte, consts map[string]bool) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("kindComparisons: %w", err)
	}
	inReward := filepath.Dir(rel) == "reward"
	var isKind func(ast.Expr) bool
	isKind = func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.ParenExpr:
			return isKind(e.X)
		case *ast.CallExpr: // a conversion: string(k), reward.JudgeKind(s)
			return len(e.Args) == 1 && isKind(e.Args[0])
		case *ast.Ident:
			return inReward && consts[e.Name]
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "reward" && consts[e.Sel.Name] {
				return true
			}
			return e.Sel.Name == "Kind" && strings.HasSuffix(strings.ToLower(types.ExprString(e.X)), "judge")
		}
		return false
	}
	var found []string
	hit := func(n ast.Node, how string) {
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), how))
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && filepath.Dir(rel)+"."+fd.Name.Name == kindBuilder {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isKind(n.X) || isKind(n.Y)) {
					hit(n, "compares a judge kind with "+n.Op.String())
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && (isKind(n.Tag) || slices.ContainsFunc(n.Body.List, func(s ast.Stmt) bool {
					return slices.ContainsFunc(s.(*ast.CaseClause).List, isKind)
				})) {
					hit(n, "switches on a judge kind")
				}
			}
			return true
		})
	}
	return found, nil
}

// judgeKindNames returns the names of reward's judge kind constants, read
// from its source: reward.JudgeKinds holds only their values.
func judgeKindNames(t *testing.T) map[string]bool {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "reward")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					if vs := s.(*ast.ValueSpec); vs.Type != nil && types.ExprString(vs.Type) == "JudgeKind" {
						for _, n := range vs.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	if len(names) != len(reward.JudgeKinds) {
		t.Fatalf("found judge kind constants %v in %s, want %d (reward.JudgeKinds %v)", names, dir, len(reward.JudgeKinds), reward.JudgeKinds)
	}
	return names
}

// moduleRoot returns the folder of the go.mod above the test's folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := pkgdoc.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
