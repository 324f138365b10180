package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestTrainResumeRules starts from run directories a crash, an edit or a
// misuse can leave, and checks what `parley train` says before it talks to
// any server: a run needs --resume, the frozen config rules (overrides of
// what is sampled or trained are refused by key, with both values), and a
// run directory without its config.yaml is named, not taken for a new run.
func TestTrainResumeRules(t *testing.T) {
	base := t.TempDir()
	cfgBody := func(seed, group int) string {
		return fmt.Sprintf("run: {name: r, dir: %q, seed: %d}\npolicy:\n  endpoints: [\"http://127.0.0.1:1\"]\nrollout: {group_size: %d}\njudge:\n  kind: rule\n  rule: {kind: agreement}\ntrain: {steps: 2}\n", base, seed, group)
	}
	cfgPath := writeYAML(t, cfgBody(3, 4))
	other := writeYAML(t, cfgBody(3, 8))
	run := dataset.RunDir(filepath.Join(base, "r"))
	writeRun := func(t *testing.T, files ...string) {
		t.Helper()
		os.RemoveAll(run.Root())
		if err := run.Create(); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			body := []byte("{}")
			if f == dataset.ConfigFile {
				body = []byte(cfgBody(3, 4))
			}
			if err := os.WriteFile(filepath.Join(run.Root(), f), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		files []string
		args  []string
		want  []string // substrings of the error
	}{
		{"existing run without --resume", []string{dataset.ConfigFile, dataset.StateFile}, []string{"--config", cfgPath},
			[]string{"holds a run (config.yaml, state.json)", "pass --resume"}},
		{"state without config", []string{dataset.StateFile, dataset.MetricsFile}, []string{"--config", cfgPath, "--resume"},
			[]string{"holds state.json, metrics.jsonl but no config.yaml", "restore", "move"}},
		{"seed and group size overridden", []string{dataset.ConfigFile, dataset.StateFile}, []string{"--config", cfgPath, "--resume", "--run.seed=99", "--rollout.group_size=8"},
			[]string{"key run.seed: the run was started with 3, now 99", "key rollout.group_size: the run was started with 4, now 8", "frozen config rules"}},
		{"another config file", []string{dataset.ConfigFile, dataset.StateFile}, []string{"--config", other, "--resume"},
			[]string{"key rollout.group_size: the run was started with 4, now 8"}},
		{"an operational change passes the check", []string{dataset.ConfigFile, dataset.StateFile}, []string{"--resume", "--run.dir=" + base, "--run.name=r", "--train.steps=5"},
			[]string{"policy.endpoints"}}, // it gets as far as the dead endpoint
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeRun(t, tt.files...)
			cmd := newTrainCmd(quietApp())
			cmd.SetArgs(tt.args)
			err := cmd.ExecuteContext(context.Background())
			if err == nil {
				t.Fatal("train = nil error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("train %v = %v\nwant it to contain %q", tt.args, err, w)
				}
			}
			if tt.name == "an operational change passes the check" && strings.Contains(err.Error(), "frozen config rules") {
				t.Errorf("an operational override was refused: %v", err)
			}
		})
	}
}
