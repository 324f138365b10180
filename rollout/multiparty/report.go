package multiparty

import "github.com/parleyhq/parley/rollout"

// Report writes the game's section of `parley report`.
func Report(in rollout.ReportInput) (string, error) { return "", nil }
