package app

import (
	"os"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestRunScaleFromConfig: export and report label scores by the judge in
// the run's frozen config.yaml.
func TestRunScaleFromConfig(t *testing.T) {
	withConfig := func(yaml string) string {
		dir := t.TempDir()
		if err := os.WriteFile(dataset.RunDir(dir).ConfigPath(), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	tests := []struct {
		name, dir, want string
		wantErr         bool
	}{
		{"ca judge", withConfig("judge:\n  kind: ca\n"), "CA 1–5", false},
		{"rule judge", withConfig("judge:\n  kind: rule\n  rule:\n    kind: length\n    target_length: 10\n"), "rule length 0–1", false},
		{"no config", t.TempDir(), "", false},
		{"no run", "", "", false},
		{"broken config", withConfig("judge: [\n"), "", true},
	}
	for _, tt := range tests {
		s, err := runScale(tt.dir)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: runScale error %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		got := ""
		if !s.IsZero() {
			got = s.Label()
		}
		if got != tt.want {
			t.Errorf("%s: scale %q, want %q", tt.name, got, tt.want)
		}
	}
}
