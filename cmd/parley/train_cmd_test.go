package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"go.uber.org/zap"
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
	// Another --config file that agrees with the frozen keys is accepted,
	// and the run says so, naming both files and the keys it changes.
	writeRun(t, dataset.ConfigFile, dataset.StateFile)
	same := writeYAML(t, cfgBody(3, 4))
	a, logs := observedApp(zap.InfoLevel)
	cmd := newTrainCmd(a)
	cmd.SetArgs([]string{"--config", same, "--resume", "--train.steps=5"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "policy.endpoints") {
		t.Fatalf("train --config (agreeing) --resume = %v, want it to reach the dead endpoint", err)
	}
	said := logs.FilterMessageSnippet("resuming with the run's frozen config").All()
	if len(said) != 1 {
		t.Fatalf("%d lines say the frozen config rules, want 1", len(said))
	}
	if m := said[0].ContextMap(); m["frozen"] != run.ConfigPath() || m["config"] != same || fmt.Sprint(m["changed"]) != "[train.steps]" {
		t.Errorf("the resume line names %v, want frozen %s, config %s, changed [train.steps]", m, run.ConfigPath(), same)
	}
}

// TestTrainRefusesMissingModel: a trainer.model that is not a model folder
// is refused before parley starts the trainer (train.trainer_command),
// naming the key and the path; it was found only by the trainer, which
// crashed with a traceback and was restarted.
func TestTrainRefusesMissingModel(t *testing.T) {
	notModel := t.TempDir()
	missing := filepath.Join(t.TempDir(), "no-such-model")
	for _, tt := range []struct {
		name, model string
		want        []string
	}{
		{"missing", missing, []string{"config key trainer.model", missing, "no such file or directory"}},
		{"not a model folder", notModel, []string{"config key trainer.model", notModel + " is not a Hugging Face model folder", "config.json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeYAML(t, fmt.Sprintf("run:\n  dir: %q\ngame:\n  env: single\ngrpo:\n  mask: final\njudge:\n  kind: rule\n  rule:\n    kind: agreement\n"+
				"train:\n  trainer_command: [/bin/false]\ntrainer:\n  model: %q\n", t.TempDir(), tt.model))
			cmd := newTrainCmd(quietApp())
			cmd.SetArgs([]string{"--config", cfg})
			err := cmd.ExecuteContext(context.Background())
			if err == nil {
				t.Fatal("train = nil error, want a refusal")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("train error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestTrainRefusesEvalRows: parley train trains on split train by default
// and refuses a selection holding held-out rows, naming the curriculum, the
// rows and the config key, before it starts anything.
func TestTrainRefusesEvalRows(t *testing.T) {
	cur := filepath.Join(t.TempDir(), "cur.jsonl")
	rows := `{"id": "t1", "category": "open_ended", "task": "Plan a trip.", "split": "train"}
{"id": "e1", "category": "open_ended", "task": "Plan a party.", "split": "eval"}
{"id": "u1", "category": "open_ended", "task": "Plan a garden."}
`
	if err := os.WriteFile(cur, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, curriculum, split string
		want                    []string
	}{
		{"every row of a bundled curriculum", "builtin:dilemmas", `""`, []string{"builtin:dilemmas: 10 rows are in split eval (ids d", "config key curriculum.split is \"\"", "training on them is refused"}},
		{"the eval split", cur, "eval", []string{cur + ": 1 row is in split eval (ids e1)", `curriculum.split is "eval"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeYAML(t, fmt.Sprintf("run:\n  dir: %q\ngame:\n  env: single\ngrpo:\n  mask: final\ncurriculum:\n  path: %q\n  split: %s\njudge:\n  kind: rule\n  rule:\n    kind: agreement\n",
				t.TempDir(), tt.curriculum, tt.split))
			cmd := newTrainCmd(quietApp())
			cmd.SetArgs([]string{"--config", cfg})
			err := cmd.ExecuteContext(context.Background())
			if err == nil {
				t.Fatal("train = nil error, want a refusal")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("train error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	// The default split trains on t1 and u1 only.
	c, err := config.Load(writeYAML(t, fmt.Sprintf("curriculum:\n  path: %q\ngame:\n  env: single\ngrpo:\n  mask: final\n", cur)), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := app.LoadCurriculum(c)
	if err != nil || len(got) != 2 || got[0].ID != "t1" || got[1].ID != "u1" {
		t.Errorf("app.LoadCurriculum(default split) = %+v, %v; want t1 and u1", got, err)
	}
}
