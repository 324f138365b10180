// Package pkgdoc finds the Go packages of a source tree that have no doc
// comment, for the test that keeps every package of this module
// documented (as Tailscale's does): a comment right above the package
// clause of one of its files, "// Package x ..." or "// Command x ...".
//
// The files go build ignores are ignored here too: folders named testdata
// or starting with "." or "_", files with a //go:build ignore line, and
// nested modules. A package's doc is read from its non-test files, and a
// package of only test files (test helpers) needs one in those; an
// external test package (x_test beside x) shares x's.
package pkgdoc

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Undocumented returns the packages under root (the folder of a go.mod)
// that have no doc comment, as their folders relative to root, in
// slash-separated form ("." for root), sorted.
func Undocumented(root string) ([]string, error) {
	var missing []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root {
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		ok, err := documented(path)
		if err != nil {
			return err
		}
		if !ok {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			missing = append(missing, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pkgdoc.Undocumented: %w", err)
	}
	slices.Sort(missing)
	return missing, nil
}

// pkgFiles is what documented learns of one package name in a folder.
type pkgFiles struct {
	nonTest, test       int  // files of each kind
	nonTestDoc, testDoc bool // a doc comment in a file of each kind
}

// documented reports whether every package in dir (none: true) has a doc
// comment.
func documented(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	pkgs := map[string]*pkgFiles{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return false, err
		}
		if ignored(f) {
			continue
		}
		p := pkgs[f.Name.Name]
		if p == nil {
			p = &pkgFiles{}
			pkgs[f.Name.Name] = p
		}
		hasDoc := f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != ""
		if strings.HasSuffix(name, "_test.go") {
			p.test++
			p.testDoc = p.testDoc || hasDoc
		} else {
			p.nonTest++
			p.nonTestDoc = p.nonTestDoc || hasDoc
		}
	}
	for name, p := range pkgs {
		if base, ok := strings.CutSuffix(name, "_test"); ok && pkgs[base] != nil {
			continue // an external test package: base's doc is its
		}
		if p.nonTest > 0 && !p.nonTestDoc || p.nonTest == 0 && !p.testDoc {
			return false, nil
		}
	}
	return true, nil
}

// ignored reports whether f has a //go:build ignore line.
func ignored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

// ModuleRoot returns the folder of the nearest go.mod at or above dir: the
// root of the module dir is in, for a test that reads the whole module
// wherever it is checked out.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("pkgdoc.ModuleRoot: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("pkgdoc.ModuleRoot: no go.mod at or above the folder")
		}
		dir = parent
	}
}
