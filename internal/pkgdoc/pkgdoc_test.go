package pkgdoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moduleRoot returns the folder of the go.mod above the test's folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestEveryPackageHasADoc: every package of the module, commands and test
// helpers included, has a doc comment.
func TestEveryPackageHasADoc(t *testing.T) {
	missing, err := Undocumented(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("packages without a doc comment (write \"// Package name ...\" or \"// Command name ...\" above the package clause of one file, e.g. a doc.go):\n\t%s",
			strings.Join(missing, "\n\t"))
	}
}

func TestUndocumented(t *testing.T) {
	root := t.TempDir()
	for path, src := range map[string]string{
		"go.mod":                      "module example.com/m\n",
		"root.go":                     "// Package m is documented.\npackage m\n",
		"doc/a.go":                    "package doc\n",
		"doc/doc.go":                  "// Package doc is documented in its doc.go.\npackage doc\n",
		"cmd/tool/main.go":            "// Command tool is documented.\npackage main\n",
		"bare/bare.go":                "package bare\n",
		"spaced/spaced.go":            "// Package spaced: a blank line is not a doc comment.\n\npackage spaced\n",
		"testdoc/x.go":                "package testdoc\n",
		"testdoc/x_test.go":           "// Package testdoc is documented only in a test file.\npackage testdoc\n",
		"helpers/h_test.go":           "// Package helpers is a test-only package, documented.\npackage helpers\n",
		"bare_helpers/h_test.go":      "package helpers\n",
		"external/e.go":               "// Package external is documented.\npackage external\n",
		"external/e_test.go":          "package external_test\n",
		"ignored/gen.go":              "//go:build ignore\n\npackage main\n",
		"ignored/i.go":                "// Package ignored is documented.\npackage ignored\n",
		"tagged/t_linux.go":           "//go:build linux\n\n// Package tagged is documented.\npackage tagged\n",
		"testdata/x.go":               "package x\n",
		".hidden/x.go":                "package x\n",
		"_skipped/x.go":               "package x\n",
		"nested/go.mod":               "module example.com/nested\n",
		"nested/n.go":                 "package nested\n",
		"no_go_files/README":          "not Go\n",
		"bare/deeper/undocumented.go": "package deeper\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Undocumented(root)
	want := []string{"bare", "bare/deeper", "bare_helpers", "spaced", "testdoc"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Undocumented = %q, %v; want %q", got, err, want)
	}
}
