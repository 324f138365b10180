package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"go.uber.org/zap"
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
		args := cfg.TrainerArgs("/runs/r")
		got := ""
		for i, a := range args {
			if a == "--report-to" && i+1 < len(args) {
				got = args[i+1]
			}
		}
		if got != tc.flag {
			t.Errorf("TrainerArgs(%q) --report-to = %q, want %q (args %v)", tc.body, got, tc.flag, args)
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
		args := cfg.TrainerArgs("/runs/r")
		flag := func(name string) string {
			if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		if got := flag("--keep-optimizer-states"); got != tc.states {
			t.Errorf("TrainerArgs(%q) --keep-optimizer-states = %q, want %q (args %v)", tc.body, got, tc.states, args)
		}
		if got := flag("--keep-weights"); got != tc.wghts {
			t.Errorf("TrainerArgs(%q) --keep-weights = %q, want %q (args %v)", tc.body, got, tc.wghts, args)
		}
	}
}

// TestSupervisionTrainerFlags: the trainer parley starts gets the argv
// config declares, and the HTTP handshake's flags (train.Run adds them once
// its server listens) are the ones config declares as such.
func TestSupervisionTrainerFlags(t *testing.T) {
	cfg, err := config.Parse([]byte("train: {handshake: http, trainer_command: [python, -m, parley_trainer]}\ntrainer: {model: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts := supervision(cfg, dataset.RunDir("/runs/r"), nil, nil, zap.NewNop())
	if got, want := opts.TrainerCommand, append([]string{"python", "-m", "parley_trainer"}, cfg.TrainerArgs("/runs/r")...); !slices.Equal(got, want) {
		t.Errorf("TrainerCommand = %q, want %q", got, want)
	}
	var handshake []string
	for _, f := range config.TrainerFlags() {
		if f.Handshake {
			handshake = append(handshake, f.Flag)
		}
	}
	var got []string
	for _, a := range opts.OnURL("http://h:1") {
		if strings.HasPrefix(a, "--") {
			got = append(got, a)
		}
	}
	if !slices.Equal(got, handshake) {
		t.Errorf("OnURL passes %q, want the handshake flags config declares, %q", got, handshake)
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

// TestTrainSummaryWholeRun: the closing table's "step A → B" rows span the
// whole run as metrics.jsonl records it, so a run resumed at step 3 still
// starts at step 1; eval lines and steps without a metric are passed over.
func TestTrainSummaryWholeRun(t *testing.T) {
	tests := []struct {
		name, metrics string
		want, not     []string
	}{
		{"resumed at step 3",
			`{"step":1,"reward_mean":0.1,"agreement_rate":0}` + "\n" +
				`{"step":2,"reward_mean":0.2,"agreement_rate":0.5,"trainer/loss":0.7}` + "\n" +
				`{"step":2,"kind":"eval","eval/win_rate":55}` + "\n" +
				`{"step":3,"reward_mean":0.3,"agreement_rate":1,"trainer/loss":0.6}` + "\n",
			[]string{"reward mean (step 1 → 3) 0.1 → 0.3", "agreement rate (step 1 → 3) 0 → 1", "trainer/loss (step 2 → 3) 0.7 → 0.6"},
			[]string{"rounds to agreement"}},
		{"no metrics file", "", nil, []string{"(step"}},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		path := filepath.Join(dir, "metrics.jsonl")
		if tt.metrics != "" {
			if err := os.WriteFile(path, []byte(tt.metrics), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var b strings.Builder
		if err := trainSummary(3, path, time.Second, zap.NewNop()).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(b.String()), " ")
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: summary\n%s\nlacks %q", tt.name, b.String(), w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(text, w) {
				t.Errorf("%s: summary\n%s\nhas %q", tt.name, b.String(), w)
			}
		}
	}
}
