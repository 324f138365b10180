package reward

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestJudgeKindBehaviour: each kind answers what callers ask of it from its
// entry; an unknown kind answers no to everything and keeps the default
// kind's scale.
func TestJudgeKindBehaviour(t *testing.T) {
	in := ScaleInputs{
		Rule:   RuleOptions{Kind: RuleKeywordShare, AgreementWeight: 0.5},
		Game:   dataset.ScoreScale{Name: "endowment share", Min: 0, Max: 1},
		Python: PythonOptions{Function: "my_rewards:score", Min: -1, Max: 1},
	}
	tests := []struct {
		kind                  JudgeKind
		known, chat, rule, gs bool
		python, audit         bool
		aspect                string
		scale                 dataset.ScoreScale
	}{
		{JudgeCA, true, true, false, false, false, true, AspectCollectiveAgency, CAScale},
		{JudgeRule, true, false, true, false, false, false, "", dataset.ScoreScale{Name: "rule keyword_share+agreement(0.5)", Min: 0, Max: 1}},
		{JudgeGame, true, false, false, true, false, false, "", in.Game},
		{JudgePython, true, false, false, false, true, false, "", dataset.ScoreScale{Name: "python my_rewards:score", Min: -1, Max: 1}},
		{"llama", false, false, false, false, false, false, "", CAScale},
		{"", false, false, false, false, false, false, "", CAScale},
	}
	for _, tt := range tests {
		k := tt.kind
		if got := k.Known(); got != tt.known {
			t.Errorf("JudgeKind(%q).Known() = %v, want %v", k, got, tt.known)
		}
		if got := k.UsesChat(); got != tt.chat {
			t.Errorf("JudgeKind(%q).UsesChat() = %v, want %v", k, got, tt.chat)
		}
		if got := k.UsesRule(); got != tt.rule {
			t.Errorf("JudgeKind(%q).UsesRule() = %v, want %v", k, got, tt.rule)
		}
		if got := k.UsesGameScorer(); got != tt.gs {
			t.Errorf("JudgeKind(%q).UsesGameScorer() = %v, want %v", k, got, tt.gs)
		}
		if got := k.UsesPython(); got != tt.python {
			t.Errorf("JudgeKind(%q).UsesPython() = %v, want %v", k, got, tt.python)
		}
		if got := k.Auditable(); got != tt.audit {
			t.Errorf("JudgeKind(%q).Auditable() = %v, want %v", k, got, tt.audit)
		}
		if got := k.PairwiseAspect(); got != tt.aspect {
			t.Errorf("JudgeKind(%q).PairwiseAspect() = %q, want %q", k, got, tt.aspect)
		}
		if got := k.Scale(in); got != tt.scale {
			t.Errorf("JudgeKind(%q).Scale() = %+v, want %+v", k, got, tt.scale)
		}
	}
	if want := []JudgeKind{JudgeCA, JudgeRule, JudgeGame, JudgePython}; !slices.Equal(JudgeKinds, want) {
		t.Errorf("JudgeKinds = %v, want %v (config errors list them in this order)", JudgeKinds, want)
	}
}

// TestRuleKindScaleIsTheJudges: the rule kind's scale, which config labels
// a run's scores with before any judge is built, is the built rule judge's.
func TestRuleKindScaleIsTheJudges(t *testing.T) {
	for _, o := range []RuleOptions{
		{Kind: RuleAgreement},
		{Kind: RuleKeywordShare, Keywords: []string{"we"}, AgreementWeight: 0.25},
		{Kind: RuleLength, TargetLength: 10, Min: -1, Max: 2},
	} {
		j, err := NewRuleJudge(o)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := JudgeRule.Scale(ScaleInputs{Rule: o}), j.Scale(); got != want {
			t.Errorf("JudgeRule.Scale(%+v) = %+v, want the judge's %+v", o, got, want)
		}
	}
}

// TestEveryJudgeKindHasAnEntry: every JudgeKind constant declared in the
// package has one complete entry in kindTable, so a kind added without one
// fails here rather than answering no to everything.
func TestEveryJudgeKindHasAnEntry(t *testing.T) {
	declared := judgeKindConstants(t, ".")
	if len(declared) == 0 {
		t.Fatal("found no JudgeKind constant: the scan is broken")
	}
	for name, value := range declared {
		if !JudgeKind(value).Known() {
			t.Errorf("judge kind %s (%q) has no entry in kindTable", name, value)
		}
	}
	seen := map[JudgeKind]bool{}
	for _, e := range kindTable {
		if seen[e.kind] {
			t.Errorf("judge kind %q has two entries in kindTable", e.kind)
		}
		seen[e.kind] = true
		if e.scale == nil {
			t.Errorf("judge kind %q's entry has no scale", e.kind)
		}
	}
	if len(kindTable) != len(declared) {
		t.Errorf("kindTable has %d entries for %d declared kinds", len(kindTable), len(declared))
	}
}

// judgeKindConstants returns the constants of type JudgeKind declared in
// the non-test Go files of dir, by name, with their values.
func judgeKindConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "JudgeKind" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: judge kind %s is not a string literal", fset.Position(n.Pos()), n.Name)
					}
					consts[n.Name] = strings.Trim(lit.Value, "\"`")
				}
			}
		}
	}
	return consts
}
