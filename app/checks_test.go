package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestCheckOut: --out rules shared by rollout, eval pairwise and bench;
// a check that fails or passes creates no directory.
func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	file := filepath.Join(dir, "file.json")
	os.WriteFile(file, nil, 0o644)
	readOnly := filepath.Join(dir, "ro")
	os.MkdirAll(readOnly, 0o555)
	tests := []struct {
		name    string
		path    string
		force   bool
		wantErr string
	}{
		{"new nested", filepath.Join(dir, "a", "b", "c"), false, ""},
		{"empty dir", t.TempDir(), false, ""},
		{"full dir", full, false, "not empty: pass --force"},
		{"full dir forced", full, true, ""},
		{"existing file", file, false, "exists: pass --force"},
		{"existing file forced", file, true, ""},
		{"read-only parent", filepath.Join(readOnly, "out"), false, "not writable"},
		// Not writable for root too: a path under a regular file, and one
		// in /proc, where nobody creates files.
		{"under a regular file", filepath.Join(file, "out"), false, "not writable"},
		{"under a regular file, nested", filepath.Join(file, "a", "b"), true, "not writable"},
		{"in /proc", "/proc/parley-out", false, "/proc is not writable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "read-only parent" && os.Geteuid() == 0 {
				t.Skip("root writes anywhere; the cases under a file and in /proc hold for root")
			}
			if strings.HasPrefix(tt.path, "/proc/") {
				if _, err := os.Stat("/proc/self"); err != nil {
					t.Skip("no /proc")
				}
			}
			err := checkOut(tt.path, tt.force)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("checkOut(%s) = %v, want %q", tt.path, err, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("checkOut created the missing directories")
	}
}

// TestAPIKeyWarnedOnce: a command that builds several clients of one server
// from the config (the reward judge, a game's judge, each side's game)
// warns once that the key variable is not set; the generator's own
// warning is separate.
func TestAPIKeyWarnedOnce(t *testing.T) {
	const variable = "PARLEY_TEST_UNSET_KEY_ONCE"
	t.Setenv(variable, "")
	core, logs := observer.New(zap.WarnLevel)
	log := zap.New(core)
	cfg := config.Default()
	cfg.Judge.APIKeyEnv, cfg.Generator.APIKeyEnv = variable, variable
	for range 3 {
		if o := judgeClient(cfg, "", log); o.APIKey != "" {
			t.Fatalf("judge key %q, want none", o.APIKey)
		}
	}
	for range 2 {
		generatorClient(cfg, log)
	}
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message)
	}
	want := []string{"the judge's API key variable is not set; sending no key", "the generator's API key variable is not set; sending no key"}
	if !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}
