package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/progress"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/internal/telemetry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/train"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newTrainCmd(a *cli) *cobra.Command {
	var path string
	var resume bool
	cmd := &cobra.Command{
		Use:   "train --config F [--resume]",
		Short: "Run the training loop: roll out, judge, write batches, hand them to the trainer, load its adapters",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path)
			if err != nil {
				return err
			}
			runDir := dataset.RunDir(cfg.RunDir())
			unlock, err := runDir.Lock()
			if err != nil {
				return fmt.Errorf("train: %w", err)
			}
			defer unlock()
			if cfg, err = resumeConfig(cmd, cfg, runDir, path, resume, log); err != nil {
				return err
			}
			return runTrain(cmd.Context(), a, cfg, runDir, log)
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().BoolVar(&resume, "resume", false, "continue the run in run.dir/run.name from its state")
	return cmd
}

// secretVars are the environment variables holding secrets that the
// processes parley starts must not see: the judge's, the generator's and
// other roles' API keys, and W&B's (trainerEnv lets the trainer have it).
func secretVars(cfg config.Config) []string {
	out := []string{cfg.Judge.APIKeyEnv, cfg.Generator.APIKeyEnv, wandbKeyEnv}
	for _, r := range cfg.Roles {
		out = append(out, r.APIKeyEnv)
	}
	return out
}

// resumeConfig decides the config of a run that may already exist: a new
// run takes cfg; a run directory holding any run file needs --resume, its
// frozen config.yaml, and a cfg that changes no key that is frozen with the
// run (config.Changes): the changes allowed (endpoints, timeouts, steps,
// logging) are logged and applied.
func resumeConfig(cmd *cobra.Command, cfg config.Config, runDir dataset.RunDir, path string, resume bool, log *zap.Logger) (config.Config, error) {
	files, err := runDir.Files()
	if err != nil {
		return cfg, fmt.Errorf("train: %w", err)
	}
	if len(files) == 0 {
		return cfg, nil
	}
	if !resume {
		return cfg, fmt.Errorf("train: run directory %s holds a run (%s): pass --resume to continue it, or choose another run.name", runDir, strings.Join(files, ", "))
	}
	if !slices.Contains(files, dataset.ConfigFile) {
		return cfg, fmt.Errorf("train: run directory %s holds %s but no %s (a crash while the run was created, or a deleted file): restore %s, or move %s away to start the run anew",
			runDir, strings.Join(files, ", "), dataset.ConfigFile, runDir.ConfigPath(), runDir)
	}
	b, err := os.ReadFile(runDir.ConfigPath())
	if err != nil {
		return cfg, fmt.Errorf("train: %w", err)
	}
	frozen, err := config.Parse(b) // as written: no environment, no flags
	if err != nil {
		return cfg, fmt.Errorf("train: the run's frozen %s: %w", runDir.ConfigPath(), err)
	}
	if path == "" {
		// No --config: the frozen config, with the environment and flags.
		if cfg, err = config.Load(runDir.ConfigPath(), cmd.Flags()); err != nil {
			return cfg, err
		}
	}
	ops, refused := config.Changes(frozen, cfg)
	if len(refused) > 0 {
		var msgs []string
		for _, c := range refused {
			msgs = append(msgs, fmt.Sprintf("key %s: the run was started with %s, now %s", c.Key, c.Old, c.New))
		}
		return cfg, fmt.Errorf("train: --resume of %s would change what the run samples or trains (%s): the frozen config rules; drop these overrides, or start a new run with another run.name",
			runDir, strings.Join(msgs, "; "))
	}
	for _, c := range ops {
		log.Info("config change on resume", zap.String("key", c.Key), zap.String("was", c.Old), zap.String("now", c.New))
	}
	return cfg, nil
}

// wandbKeyEnv holds the W&B API key; wandb reads it in the trainer.
const wandbKeyEnv = "WANDB_API_KEY"

// trainerEnv names the secret-looking variables the trainer parley starts
// may see: the W&B key when trainer.report_to has wandb (the inference
// server never sees it: secretVars).
func trainerEnv(cfg config.Config) []string {
	if cfg.Trainer.Reports(config.ReportWandb) {
		return []string{wandbKeyEnv}
	}
	return nil
}

// trainerArgs builds the PyTorch trainer's flags from the config (the
// handshake URL is added by train.Run in HTTP mode).
func trainerArgs(cfg config.Config, runDir string) []string {
	t := cfg.Trainer
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := []string{
		"--run-dir", runDir, "--model", t.Model, "--mode", cfg.Train.Handshake,
		"--lr", f(t.LR), "--epsilon-low", f(t.EpsilonLow), "--epsilon-high", f(t.EpsilonHigh),
		"--beta", f(t.KLBeta), "--tis-cap", f(t.TISCap), "--aggregation", t.Aggregation,
		"--micro-batch-tokens", strconv.Itoa(t.MicroBatchTokens), "--max-grad-norm", f(t.MaxGradNorm),
		"--weight-decay", f(t.WeightDecay), "--seed", strconv.FormatInt(cfg.Run.Seed, 10),
		"--report-to", strings.Join(t.ReportTo, ","),
	}
	if t.FullFinetune {
		args = append(args, "--full-finetune")
	} else {
		args = append(args, "--lora-r", strconv.Itoa(t.LoRAR), "--lora-alpha", strconv.Itoa(t.LoRAAlpha), "--lora-dropout", f(t.LoRADropout))
	}
	return append(args, t.ExtraArgs...)
}

// runTrain wires the config into train.Run.
func runTrain(ctx context.Context, a *cli, cfg config.Config, runDir dataset.RunDir, log *zap.Logger) error {
	prompts, err := trainPrompts(cfg)
	if err != nil {
		return err
	}
	if err := preflightJudge(ctx, cfg, log); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	frozen, err := cfg.YAML()
	if err != nil {
		return err
	}
	policy, err := newPolicy(cfg, log)
	if err != nil {
		return err
	}
	defer policy.Close()
	ro, closePlayers, err := runnerOptions(cfg, policy, log)
	if err != nil {
		return err
	}
	defer closePlayers()
	tm, err := serveMetrics(ctx, cfg, policy, log)
	if err != nil {
		return err
	}
	ro.OnActive = tm.Active
	judge, closeJudge, err := newJudge(cfg, runDir.Root(), tm.ObserveJudge, log)
	if err != nil {
		return err
	}
	defer closeJudge()
	every, evalOpts, closeEval, err := evalOptions(cfg, judge, runDir.Root(), log)
	if err != nil {
		return err
	}
	defer closeEval()
	bars := a.bars()
	defer bars.Wait()
	evals, err := loopEval(every, evalOpts, ro, bars.Start, log)
	if err != nil {
		return err
	}
	rep := &stepReporter{bar: bars.Add("steps", int64(cfg.Train.Steps)), tm: tm, log: log, start: time.Now()}
	opts := supervision(cfg, runDir, frozen, policy, log)
	opts.Loop = train.LoopOptions{
		Dir: runDir, RunID: cfg.Run.Name, Seed: cfg.Run.Seed, Steps: cfg.Train.Steps, MaxStaleness: cfg.Train.MaxStaleness,
		Prompts: prompts, Mix: cfg.Curriculum.Mix, PromptsPerStep: cfg.Rollout.PromptsPerStep,
		Series:  seriesOptions(cfg, prompts),
		Rollout: ro, Judge: judge, JudgeConcurrency: cfg.Judge.Concurrency,
		Advantage: advantageOptions(cfg.GRPO), Mask: cfg.GRPO.Mask, AdapterPrefix: cfg.Train.AdapterPrefix,
		TrainerTimeout: cfg.Train.TrainerTimeout, MaxFailedFraction: cfg.Train.MaxFailedFraction, Logger: log,
		Eval: evals, OnStart: rep.onStart, Progress: bars.Start, OnStep: rep.onStep,
	}
	st, err := train.Run(ctx, opts)
	if err != nil {
		return err
	}
	bars.Wait()
	a.summarize(trainSummary(st.Step, rep.first, rep.last, time.Since(rep.start)).
		Add("run", runDir.Root()).Add("adapter", st.Adapter))
	return nil
}

// trainPrompts loads the curriculum's training rows, refusing a group
// with no group-relative advantage and a selection holding eval rows.
func trainPrompts(cfg config.Config) ([]dataset.Prompt, error) {
	if cfg.Rollout.GroupSize < 2 && cfg.GRPO.Advantage != grpo.ModeRoleBaseline {
		return nil, fmt.Errorf("train: config key rollout.group_size: a group of %d has no group-relative advantage in %s mode: use 2 or more", cfg.Rollout.GroupSize, cfg.GRPO.Advantage)
	}
	prompts, err := loadCurriculum(cfg)
	if err != nil {
		return nil, err
	}
	if err := dataset.CheckTrainRows(cfg.Curriculum.Path, prompts); err != nil {
		return nil, fmt.Errorf("train: config key curriculum.split is %q: %w; set curriculum.split: train (the default) to train on the train rows only", cfg.Curriculum.Split, err)
	}
	return prompts, nil
}

// supervision is train.Run's options but the loop's: the inference
// server and the trainer it starts or waits for, the handshake, and what
// each child process may see of the environment.
func supervision(cfg config.Config, runDir dataset.RunDir, frozen []byte, policy *llm.Client, log *zap.Logger) train.RunOptions {
	args := trainerArgs(cfg, runDir.Root())
	var command []string
	if len(cfg.Train.TrainerCommand) > 0 {
		command = append(slices.Clone(cfg.Train.TrainerCommand), args...)
	}
	return train.RunOptions{
		FrozenConfig: frozen, Server: policy, Model: cfg.Policy.Model,
		ServerCommand: cfg.Train.ServerCommand, ServerStartTimeout: cfg.Train.ServerStartTimeout,
		TrainerCommand: command, TrainerHint: append([]string{"python", "-m", "parley_trainer"}, args...),
		Handshake: cfg.Train.Handshake, HTTPAddr: cfg.Train.HTTPAddr, Token: os.Getenv(cfg.Train.TokenEnv), TokenEnv: cfg.Train.TokenEnv,
		OnURL:      func(url string) []string { return []string{"--url", url, "--token-env", cfg.Train.TokenEnv} },
		Secrets:    secretVars(cfg),
		ServerEnv:  []string{cfg.Policy.APIKeyEnv},
		TrainerEnv: trainerEnv(cfg),
		Logger:     log,
	}
}

// stepReporter shows each finished step: the steps bar, the Prometheus
// gauges, a log line, and the first and last steps' metrics for the
// closing summary.
type stepReporter struct {
	bar         *progress.Bar
	tm          *telemetry.Metrics
	log         *zap.Logger
	start       time.Time
	first, last map[string]any
}

func (r *stepReporter) onStart(done int) { r.bar.SetCurrent(int64(done)) }

func (r *stepReporter) onStep(m map[string]any) {
	r.bar.Increment()
	r.tm.Step(m)
	if r.first == nil {
		r.first = m
	}
	r.last = m
	get := func(k metrics.Key) any { return m[string(k)] }
	r.log.Info("step done", zap.Any("step", get(metrics.KeyStep)), zap.Any("reward_mean", get(metrics.KeyRewardMean)),
		zap.Any("score_max", get(metrics.KeyScoreMax)), zap.Any("agreement_rate", get(metrics.KeyAgreementRate)),
		zap.Any("loss", get(metrics.KeyTrainerLoss)), zap.Any("sampled_tokens", get(metrics.KeySampledTokens)))
}

// trainSummary is parley train's closing table: steps done and how the
// step metrics moved from the first step of this invocation to the last.
func trainSummary(steps int, first, last map[string]any, elapsed time.Duration) *summary.Table {
	t := summary.New("train").Add("steps", steps).Add("elapsed", elapsed)
	for _, key := range []metrics.Key{metrics.KeyRewardMean, metrics.KeyAgreementRate, metrics.KeyRoundsToAgreement, metrics.KeyTrainerLoss} {
		k := string(key)
		a, okA := first[k].(float64)
		b, okB := last[k].(float64)
		if !okA || !okB {
			continue
		}
		t.Add(strings.ReplaceAll(k, "_", " ")+" (first → last)", summary.Format(a)+" → "+summary.Format(b))
	}
	return t
}

// serveMetrics serves the run's Prometheus metrics on train.metrics_addr;
// with none set it returns nil metrics, which ignore every call.
func serveMetrics(ctx context.Context, cfg config.Config, policy *llm.Client, log *zap.Logger) (*telemetry.Metrics, error) {
	if cfg.Train.MetricsAddr == "" {
		return nil, nil
	}
	tm := telemetry.New(policy.Stats)
	url, err := tm.Serve(ctx, cfg.Train.MetricsAddr, log)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	log.Info("serving Prometheus metrics", zap.String("url", url))
	return tm, nil
}

// seriesOptions makes training run over series when the game lays them
// out (rollout.Spec.Series): rollout.prompts_per_step series in flight.
func seriesOptions(cfg config.Config, prompts []dataset.Prompt) *train.SeriesOptions {
	spec, ok := rollout.Lookup(cfg.Game.Env)
	if !ok || spec.Series == nil {
		return nil
	}
	section := cfg.Game.Active()
	return &train.SeriesOptions{Slots: cfg.Rollout.PromptsPerStep, Plan: func(n int, seed int64) ([]rollout.Series, error) {
		return spec.Series(section, prompts, n, seed)
	}}
}
