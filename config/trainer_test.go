package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestTrainerArgs: the trainer's argv for a config, flag by flag (what
// app/train.go wrote by hand before trainerFlags; deploy/kubernetes's
// trainer Job holds the same, through app's TestKubernetesManifests).
func TestTrainerArgs(t *testing.T) {
	common := func(mode, seed, reportTo string) []string {
		return []string{"--run-dir", "/runs/r", "--model", "", "--mode", mode, "--lr", "1e-05", "--epsilon-low", "0.2", "--epsilon-high", "0.28",
			"--beta", "0", "--tis-cap", "0", "--aggregation", "token_mean", "--micro-batch-tokens", "8192", "--max-grad-norm", "1",
			"--weight-decay", "0", "--seed", seed, "--report-to", reportTo, "--keep-optimizer-states", "2"}
	}
	lora := []string{"--lora-r", "16", "--lora-alpha", "32", "--lora-dropout", "0"}
	withModel := func(args []string) []string {
		args = slices.Clone(args)
		args[slices.Index(args, "--model")+1] = "m"
		return args
	}
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"", slices.Concat(common("file", "1", "tensorboard"), lora)},
		{"run: {seed: -4}\ntrain: {handshake: http}\ntrainer: {report_to: [tensorboard, wandb], lora_dropout: 0.05, extra_args: [--fsdp, --threads, '2']}\n",
			slices.Concat(common("http", "-4", "tensorboard,wandb"), []string{"--lora-r", "16", "--lora-alpha", "32", "--lora-dropout", "0.05", "--fsdp", "--threads", "2"})},
		{"trainer: {full_finetune: true, model: m, keep_weights: 3}\n",
			slices.Concat(withModel(common("file", "1", "tensorboard")), []string{"--full-finetune", "--keep-weights", "3"})},
		{"trainer: {full_finetune: true, model: m}\ntrain: {weight_sync: {transfer: nccl, nccl_addr: 'h:1'}}\n",
			slices.Concat(withModel(common("file", "1", "tensorboard")), []string{"--full-finetune", "--keep-weights", "0", "--weight-transfer", "nccl", "--nccl-addr", "h:1"})},
		{"trainer: {report_to: none}\n", slices.Concat(common("file", "1", "none"), lora)},
	} {
		cfg, err := Parse([]byte(tc.body))
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tc.body, err)
		}
		if got := cfg.TrainerArgs("/runs/r"); !slices.Equal(got, tc.want) {
			t.Errorf("TrainerArgs(%q) =\n %q\nwant\n %q", tc.body, got, tc.want)
		}
	}
	cfg := Default()
	cfg.Trainer.LR, cfg.Trainer.EpsilonHigh = 3.5e-7, 1e20
	args := cfg.TrainerArgs("r")
	if i := slices.Index(args, "--lr"); args[i+1] != "3.5e-07" || args[slices.Index(args, "--epsilon-high")+1] != "1e+20" {
		t.Errorf("TrainerArgs: floats written %q and %q, want 3.5e-07 and 1e+20 (shortest 'g', as Python's float reads)", args[i+1], args[slices.Index(args, "--epsilon-high")+1])
	}
}

// TestTrainerFlagsKeys: every trainer.* key reaches the trainer through a
// flag (trainer.extra_args is the argv's tail), every flag parley passes
// names a real key of a type its flag type writes, and no flag is
// declared twice. A key added to Trainer without its flag fails here; a
// flag without the trainer's parser fails scripts/tests/test_options.py.
func TestTrainerFlagsKeys(t *testing.T) {
	cfg := Default()
	kinds := map[string]reflect.Type{}
	for _, l := range leaves(reflect.ValueOf(&cfg).Elem(), "", nil) {
		kinds[l.key] = l.v.Type()
	}
	byKey := map[string]TrainerFlag{}
	seen := map[string]bool{}
	for _, f := range TrainerFlags() {
		if seen[f.Flag] {
			t.Errorf("trainer flag %s declared twice", f.Flag)
		}
		seen[f.Flag] = true
		if !strings.HasPrefix(f.Flag, "--") {
			t.Errorf("trainer flag %q: want --name", f.Flag)
		}
		if !f.Passed() {
			if f.Type != "" || f.Choices != nil || f.Handshake || f.when != nil {
				t.Errorf("trainer flag %s has no key, so parley never passes it: want no type, choices or condition", f.Flag)
			}
			continue
		}
		if prev, dup := byKey[f.Key]; dup {
			t.Errorf("key %s feeds two flags, %s and %s", f.Key, prev.Flag, f.Flag)
		}
		byKey[f.Key] = f
		typ, ok := kinds[f.Key]
		if !ok {
			t.Errorf("trainer flag %s: key %s is no config key", f.Flag, f.Key)
			continue
		}
		want := map[reflect.Kind][]TrainerFlagType{
			reflect.Float64: {FlagFloat}, reflect.Int: {FlagInt}, reflect.Int64: {FlagInt},
			reflect.String: {FlagString, FlagPath}, reflect.Slice: {FlagList}, reflect.Bool: {FlagSwitch},
		}[typ.Kind()]
		if !slices.Contains(want, f.Type) {
			t.Errorf("trainer flag %s: key %s is a %s, written as %q: want one of %q", f.Flag, f.Key, typ, f.Type, want)
		}
	}
	for key := range kinds {
		if strings.HasPrefix(key, "trainer.") && key != "trainer.extra_args" {
			if _, ok := byKey[key]; !ok {
				t.Errorf("key %s reaches no trainer flag: declare its flag in trainerFlags (config/trainer.go) and the trainer's parser (scripts/parley_trainer/config.py), then go generate ./config", key)
			}
		}
	}
}

// TestTrainerOptionsCurrent fails when scripts/parley_trainer/options.json
// is not what trainerFlags declares (go generate ./config writes it).
func TestTrainerOptionsCurrent(t *testing.T) {
	want, err := TrainerOptionsJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "scripts", "parley_trainer", "options.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("scripts/parley_trainer/options.json is stale (%v): run go generate ./config", err)
	}
}

// TestTrainerExtraArgs: the shipped configs' trainer.extra_args give only
// flags the trainer takes and parley leaves to it (a flag parley passes,
// given again, would silently override its key).
func TestTrainerExtraArgs(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	for _, file := range files {
		cfg, err := Load(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range cfg.Trainer.ExtraArgs {
			if !strings.HasPrefix(a, "--") {
				continue
			}
			if f, ok := LookupTrainerFlag(a); !ok || f.Passed() {
				t.Errorf("%s: trainer.extra_args has %s: want a flag of the trainer's own (declared in trainerFlags, no key)", file, a)
			}
		}
	}
}
