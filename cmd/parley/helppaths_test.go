package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var configPathRE = regexp.MustCompile(`configs/[A-Za-z0-9_./-]+\.ya?ml`)

// TestNamedConfigsExist: every config file that a command's help, the
// README or docs/ names exists (`parley tournament --help` once named
// configs/tournament-agents.yaml, which never did).
func TestNamedConfigsExist(t *testing.T) {
	texts := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var b strings.Builder
		b.WriteString(c.Short + "\n" + c.Long + "\n" + c.Example + "\n")
		c.Flags().VisitAll(func(f *pflag.Flag) { b.WriteString(f.Usage + " " + f.DefValue + "\n") })
		texts[c.CommandPath()+" --help"] = b.String()
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, p := range append(docs, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts[p] = string(b)
	}
	named := 0
	for where, text := range texts {
		for _, p := range configPathRE.FindAllString(text, -1) {
			named++
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				t.Errorf("%s names %s, which does not exist", where, p)
			}
		}
	}
	if named == 0 {
		t.Fatal("no config file named anywhere: the pattern is wrong")
	}
	if !strings.Contains(texts["parley tournament --help"], "configs/tournaments/seed001-agents.yaml") {
		t.Errorf("parley tournament --help does not name the tournament file:\n%s", texts["parley tournament --help"])
	}
}
