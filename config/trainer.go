package config

//go:generate go run ./internal/trainerflags

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Trainer holds the PyTorch trainer's hyperparameters; parley passes them as flags.
type Trainer struct {
	// Model is the base model folder (or hub id for real runs).
	Model string `yaml:"model"`
	// LR is the optimizer's learning rate (AdamW).
	LR float64 `yaml:"lr"`
	// EpsilonLow and EpsilonHigh clip the ratio (0.2/0.28).
	EpsilonLow  float64 `yaml:"epsilon_low"`
	EpsilonHigh float64 `yaml:"epsilon_high"`
	// KLBeta weighs the k3 KL to the reference (0: off).
	KLBeta float64 `yaml:"kl_beta"`
	// TISCap is the cap C of truncated importance sampling (0: off): each
	// trained token's policy-gradient loss is weighted by
	// min(exp(logp_trainer - logp_sampler), C), the ratio then being taken
	// against the trainer's own logprobs (TRL's vllm_importance_sampling_cap,
	// verl's TIS). It corrects the sampler/trainer mismatch of a real engine.
	TISCap float64 `yaml:"tis_cap"`
	// Aggregation is token_mean, seq_mean_token_mean or dr_grpo.
	Aggregation string `yaml:"aggregation"`
	// LoRAR is the LoRA rank (vLLM must serve with --max-lora-rank at
	// least this).
	LoRAR int `yaml:"lora_r"`
	// LoRAAlpha is the LoRA scaling numerator (the update is scaled by
	// alpha/r).
	LoRAAlpha int `yaml:"lora_alpha"`
	// LoRADropout is the dropout on the LoRA input.
	LoRADropout float64 `yaml:"lora_dropout"`
	// FullFinetune trains every weight instead of a LoRA adapter: each
	// step's weights reach every endpoint through vLLM's RL API
	// (train.weight_sync), which the server serves with
	// VLLM_SERVER_DEV_MODE=1.
	FullFinetune bool `yaml:"full_finetune"`
	// MicroBatchTokens is the token budget of a micro-batch.
	MicroBatchTokens int `yaml:"micro_batch_tokens"`
	// MaxGradNorm clips gradients.
	MaxGradNorm float64 `yaml:"max_grad_norm"`
	// WeightDecay is AdamW's weight decay.
	WeightDecay float64 `yaml:"weight_decay"`
	// ReportTo is where the trainer sends each step's metrics (its own
	// under trainer/, parley's under parley/) besides its log, as HF
	// Trainer's report_to: tensorboard (event files in RUN/tensorboard/),
	// wandb (needs the wandb package in the trainer's Python; the key from
	// WANDB_API_KEY, which parley then passes to the trainer and never to
	// the inference server), both, or none.
	ReportTo Names `yaml:"report_to"`
	// KeepStates is how many of the newest checkpoints keep the trainer's
	// resume state (optimizer.pt, rng.pt; under FSDP accelerate_state/,
	// which holds a whole copy of the model and the optimizer); the older
	// ones lose it, each at once (0: every checkpoint keeps it). A resume
	// reads the newest checkpoint only; adapters are always kept.
	KeepStates int `yaml:"keep_states"`
	// KeepWeights (trainer.full_finetune) is how many of the newest
	// checkpoints keep their full weights (0: all); the older ones keep
	// their DONE and metrics but can no longer be served or evaluated. At
	// least train.max_off_policy_steps + 2, so that the weights the
	// servers are loading are never pruned.
	KeepWeights int `yaml:"keep_weights"`
	// ExtraArgs are appended to the trainer's command line as they are.
	ExtraArgs []string `yaml:"extra_args"`
}

// Reports reports whether the trainer sends its metrics to target (one
// of ReportTargets).
func (t Trainer) Reports(target string) bool {
	for _, r := range t.ReportTo {
		if r == target {
			return true
		}
	}
	return false
}

// Aggregations are trainer.aggregation's values: the loss aggregations the
// trainer implements (parley_trainer/loss.py reads them from the generated
// options.json, so they are spelled here only).
var Aggregations = []string{"token_mean", "seq_mean_token_mean", "dr_grpo"}

// The PyTorch trainer's command line (python -m parley_trainer) is
// declared once, in trainerFlags: every flag the trainer takes, the config
// key parley fills it from (none for the flags it leaves to the trainer's
// defaults and trainer.extra_args), how the value is written and the values
// the trainer accepts. Config.TrainerArgs builds the trainer's argv from
// it; go generate ./config writes it to scripts/parley_trainer/options.json,
// from which the trainer takes its choices (the aggregations among them)
// and against which its tests check its parser. Tests on both sides fail
// when a trainer.* key, a Go flag or a Python flag lacks its counterpart;
// app's TestKubernetesManifests holds deploy/kubernetes/trainer.yaml to
// the argv built here.

// TrainerFlagType is how parley writes a flag's value on the trainer's
// command line, and what the trainer parses it as.
type TrainerFlagType string

// The trainer flags' types.
const (
	// FlagFloat is a float64 key, written shortest ('g', as Python's float parses it).
	FlagFloat TrainerFlagType = "float"
	// FlagInt is an int key.
	FlagInt TrainerFlagType = "int"
	// FlagString is a string key, as it is.
	FlagString TrainerFlagType = "str"
	// FlagPath is a string key naming a file or folder.
	FlagPath TrainerFlagType = "path"
	// FlagList is a list key, written as one comma list.
	FlagList TrainerFlagType = "list"
	// FlagSwitch is a bool key: the bare flag when it is true, nothing when false.
	FlagSwitch TrainerFlagType = "switch"
)

// TrainerFlag is one flag of the PyTorch trainer.
type TrainerFlag struct {
	// Flag is the flag as the trainer spells it ("--lr").
	Flag string `json:"flag"`
	// Key is the config key parley fills the flag from; "" for a flag
	// parley never passes (the trainer's own default holds unless
	// trainer.extra_args sets it).
	Key string `json:"key,omitempty"`
	// Type is how the value is written; "" for a flag parley never passes.
	Type TrainerFlagType `json:"type,omitempty"`
	// Choices are the values the trainer accepts, when it names them
	// (for a list, the values of its items).
	Choices []string `json:"choices,omitempty"`
	// Handshake marks the flags that train.Run adds itself once the HTTP
	// handshake server listens (train.handshake: http), not TrainerArgs.
	Handshake bool `json:"handshake,omitempty"`
	// when, if set, says whether the config passes the flag at all.
	when func(Config) bool
}

// Passed reports whether parley passes the flag (it has a config key).
func (f TrainerFlag) Passed() bool { return f.Key != "" }

func lora(c Config) bool         { return !c.Trainer.FullFinetune }
func fullFinetune(c Config) bool { return c.Trainer.FullFinetune }
func ncclTransfer(c Config) bool {
	return c.Trainer.FullFinetune && c.Train.WeightSync.Transfer == TransferNCCL
}

// runDirKey is the key of the --run-dir row, whose value is the run
// directory (run.dir joined with run.name), given to TrainerArgs.
const runDirKey = "run.dir"

// trainerFlags is the trainer's command line, in the order parley writes
// it; the trainer-only flags follow.
var trainerFlags = []TrainerFlag{
	{Flag: "--run-dir", Key: runDirKey, Type: FlagPath},
	{Flag: "--model", Key: "trainer.model", Type: FlagPath},
	{Flag: "--mode", Key: "train.handshake", Type: FlagString, Choices: HandshakeKinds},
	{Flag: "--lr", Key: "trainer.lr", Type: FlagFloat},
	{Flag: "--epsilon-low", Key: "trainer.epsilon_low", Type: FlagFloat},
	{Flag: "--epsilon-high", Key: "trainer.epsilon_high", Type: FlagFloat},
	{Flag: "--beta", Key: "trainer.kl_beta", Type: FlagFloat},
	{Flag: "--tis-cap", Key: "trainer.tis_cap", Type: FlagFloat},
	{Flag: "--aggregation", Key: "trainer.aggregation", Type: FlagString, Choices: Aggregations},
	{Flag: "--micro-batch-tokens", Key: "trainer.micro_batch_tokens", Type: FlagInt},
	{Flag: "--max-grad-norm", Key: "trainer.max_grad_norm", Type: FlagFloat},
	{Flag: "--weight-decay", Key: "trainer.weight_decay", Type: FlagFloat},
	{Flag: "--seed", Key: "run.seed", Type: FlagInt},
	{Flag: "--report-to", Key: "trainer.report_to", Type: FlagList, Choices: ReportTargets},
	{Flag: "--keep-optimizer-states", Key: "trainer.keep_states", Type: FlagInt},
	{Flag: "--full-finetune", Key: "trainer.full_finetune", Type: FlagSwitch},
	{Flag: "--keep-weights", Key: "trainer.keep_weights", Type: FlagInt, when: fullFinetune},
	{Flag: "--weight-transfer", Key: "train.weight_sync.transfer", Type: FlagString, Choices: Transfers, when: ncclTransfer},
	{Flag: "--nccl-addr", Key: "train.weight_sync.nccl_addr", Type: FlagString, when: ncclTransfer},
	{Flag: "--lora-r", Key: "trainer.lora_r", Type: FlagInt, when: lora},
	{Flag: "--lora-alpha", Key: "trainer.lora_alpha", Type: FlagInt, when: lora},
	{Flag: "--lora-dropout", Key: "trainer.lora_dropout", Type: FlagFloat, when: lora},
	{Flag: "--url", Key: "train.http_addr", Type: FlagString, Handshake: true},
	{Flag: "--token-env", Key: "train.token_env", Type: FlagString, Handshake: true},

	// The trainer's own: its defaults, or trainer.extra_args.
	{Flag: "--poll-interval"}, {Flag: "--http-wait"}, {Flag: "--max-steps"}, {Flag: "--exit-when-file"},
	{Flag: "--log-file"}, {Flag: "--quiet"}, {Flag: "--dry-run"}, {Flag: "--tensorboard-dir"},
	{Flag: "--dr-grpo-max-tokens"}, {Flag: "--max-token-staleness"}, {Flag: "--temperature-scaling"},
	{Flag: "--adam-beta1"}, {Flag: "--adam-beta2"}, {Flag: "--adam-eps"}, {Flag: "--mini-batches"},
	{Flag: "--freeze"}, {Flag: "--lora-target-modules"}, {Flag: "--device"}, {Flag: "--dtype"},
	{Flag: "--gradient-checkpointing"}, {Flag: "--fsdp"}, {Flag: "--threads"},
}

// TrainerFlags returns the trainer's flags: those parley passes, in the
// order it writes them, then the trainer's own.
func TrainerFlags() []TrainerFlag {
	out := make([]TrainerFlag, len(trainerFlags))
	copy(out, trainerFlags)
	return out
}

// LookupTrainerFlag returns the trainer's flag named flag ("--lr").
func LookupTrainerFlag(flag string) (TrainerFlag, bool) {
	for _, f := range trainerFlags {
		if f.Flag == flag {
			return f, true
		}
	}
	return TrainerFlag{}, false
}

// TrainerArgs is the PyTorch trainer's command line for this config and
// the run directory runDir: every flag parley passes, from its key, then
// trainer.extra_args as they are (the handshake URL and its token's
// variable are added by train.Run in HTTP mode).
func (c Config) TrainerArgs(runDir string) []string {
	values := map[string]reflect.Value{}
	for _, l := range leaves(reflect.ValueOf(&c).Elem(), "", nil) {
		values[l.key] = l.v
	}
	var args []string
	for _, f := range trainerFlags {
		if !f.Passed() || f.Handshake || (f.when != nil && !f.when(c)) {
			continue
		}
		if f.Key == runDirKey {
			args = append(args, f.Flag, runDir)
			continue
		}
		v, ok := values[f.Key]
		if !ok {
			panic(fmt.Sprintf("config: trainer flag %s: no key %s", f.Flag, f.Key))
		}
		if f.Type == FlagSwitch {
			if v.Bool() {
				args = append(args, f.Flag)
			}
			continue
		}
		args = append(args, f.Flag, flagValue(v))
	}
	return append(args, c.Trainer.ExtraArgs...)
}

// flagValue writes a key's value as the trainer parses it.
func flagValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Int, reflect.Int64, reflect.Int32:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(items, ",")
	default:
		return fmt.Sprint(v.Interface())
	}
}

// TrainerOptionsJSON is scripts/parley_trainer/options.json: trainerFlags
// for the trainer, written by go generate ./config.
func TrainerOptionsJSON() ([]byte, error) {
	b, err := json.MarshalIndent(struct {
		Generated string        `json:"generated"`
		Flags     []TrainerFlag `json:"flags"`
	}{"by go generate ./config from config/trainer.go (trainerFlags); do not edit", trainerFlags}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("config: trainer options: %w", err)
	}
	return append(b, '\n'), nil
}
