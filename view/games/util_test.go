package games_test

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/stats"
)

func statsRating(r, rd float64) stats.Glicko2Rating {
	return stats.Glicko2Rating{R: r, RD: rd, Sigma: 0.06}
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
