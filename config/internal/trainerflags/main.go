// Command trainerflags writes scripts/parley_trainer/options.json, the
// trainer's command line as config declares it (go generate ./config).
package main

import (
	"fmt"
	"os"

	"github.com/parleyhq/parley/config"
)

func main() {
	b, err := config.TrainerOptionsJSON()
	if err == nil {
		err = os.WriteFile("../scripts/parley_trainer/options.json", b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainerflags:", err)
		os.Exit(1)
	}
}
