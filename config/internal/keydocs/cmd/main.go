// Command keydocs writes config/keydocs_gen.go (go generate ./config).
package main

import (
	"fmt"
	"os"

	"github.com/parleyhq/parley/config/internal/keydocs"
)

func main() {
	b, err := keydocs.Generate("..")
	if err == nil {
		err = os.WriteFile("keydocs_gen.go", b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "keydocs:", err)
		os.Exit(1)
	}
}
