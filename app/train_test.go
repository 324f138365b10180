package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
)

// TestTrainerArgsReportTo (issue 12, item 9): trainer.report_to reaches the
// trainer as --report-to, and the W&B key is let through to the trainer
// only when report_to has wandb (the server never gets it: secretVars).
func TestTrainerArgsReportTo(t *testing.T) {
	for _, tc := range []struct {
		body    string
		flag    string
		wantEnv []string
	}{
		{"", "tensorboard", nil},
		{"trainer: {report_to: wandb}\n", "wandb", []string{"WANDB_API_KEY"}},
		{"trainer: {report_to: [tensorboard, wandb]}\n", "tensorboard,wandb", []string{"WANDB_API_KEY"}},
		{"trainer: {report_to: none}\n", "none", nil},
	} {
		cfg, err := config.Parse([]byte(tc.body))
		if err != nil {
			t.Fatalf("config.Parse(%q) = %v", tc.body, err)
		}
		args := trainerArgs(cfg, "/runs/r")
		got := ""
		for i, a := range args {
			if a == "--report-to" && i+1 < len(args) {
				got = args[i+1]
			}
		}
		if got != tc.flag {
			t.Errorf("trainerArgs(%q) --report-to = %q, want %q (args %v)", tc.body, got, tc.flag, args)
		}
		if env := trainerEnv(cfg); strings.Join(env, ",") != strings.Join(tc.wantEnv, ",") {
			t.Errorf("trainerEnv(%q) = %v, want %v", tc.body, env, tc.wantEnv)
		}
		if !slices.Contains(secretVars(cfg), "WANDB_API_KEY") {
			t.Errorf("secretVars(%q) = %v: the inference server could see WANDB_API_KEY", tc.body, secretVars(cfg))
		}
	}
}

// writeYAML writes a config body to a file and returns its path.
func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
