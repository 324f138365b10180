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

// TestTrainerArgsKeep: trainer.keep_states and (full fine-tuning)
// trainer.keep_weights reach the trainer's pruning flags.
func TestTrainerArgsKeep(t *testing.T) {
	for _, tc := range []struct {
		body          string
		states, wghts string // "": flag absent
	}{
		{"", "2", ""},
		{"trainer: {keep_states: 5}\n", "5", ""},
		{"trainer: {keep_states: 0}\n", "0", ""},
		{"trainer: {full_finetune: true, model: m}\n", "2", "0"},
		{"trainer: {full_finetune: true, model: m, keep_weights: 3, keep_states: 1}\n", "1", "3"},
	} {
		cfg, err := config.Parse([]byte(tc.body))
		if err != nil {
			t.Fatalf("config.Parse(%q) = %v", tc.body, err)
		}
		args := trainerArgs(cfg, "/runs/r")
		flag := func(name string) string {
			if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		if got := flag("--keep-optimizer-states"); got != tc.states {
			t.Errorf("trainerArgs(%q) --keep-optimizer-states = %q, want %q (args %v)", tc.body, got, tc.states, args)
		}
		if got := flag("--keep-weights"); got != tc.wghts {
			t.Errorf("trainerArgs(%q) --keep-weights = %q, want %q (args %v)", tc.body, got, tc.wghts, args)
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
