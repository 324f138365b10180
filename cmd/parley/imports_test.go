package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoGame: cmd/parley imports no game package. A game's command
// or serve-sim flag joins the command line through package command; the
// games are imported once, through rollout/games.
func TestImportsNoGame(t *testing.T) {
	const games = "github.com/parleyhq/parley/rollout/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, games) && path != games+"games" {
				t.Errorf("%s imports game package %s: register its command or serve-sim flag with package command instead", name, path)
			}
		}
	}
}
