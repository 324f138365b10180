package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/train"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newTrainCmd(a *app) *cobra.Command {
	var path string
	var resume bool
	cmd := &cobra.Command{
		Use:   "train --config F [--resume]",
		Short: "Run the training loop: roll out, judge, write batches, hand them to the trainer, load its adapters",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			runDir := dataset.RunDir(cfg.RunDir())
			frozen := runDir.ConfigPath()
			if _, err := os.Stat(frozen); err == nil {
				if !resume {
					return fmt.Errorf("train: run directory %s exists: pass --resume to continue it, or choose another run.name", runDir)
				}
				// The run goes on under the config it started with; the
				// environment and flags may still override (e.g. train.steps).
				if cfg, err = config.Load(frozen, cmd.Flags()); err != nil {
					return err
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("train: %w", err)
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			return runTrain(cmd.Context(), a, cfg, runDir, log)
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().BoolVar(&resume, "resume", false, "continue the run in run.dir/run.name from its state")
	return cmd
}

// trainerArgs builds the PyTorch trainer's flags from the config (the
// handshake URL is added by train.Run in HTTP mode).
func trainerArgs(cfg config.Config, runDir string) []string {
	t := cfg.Trainer
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := []string{
		"--run-dir", runDir, "--model", t.Model, "--mode", cfg.Train.Handshake,
		"--lr", f(t.LR), "--epsilon-low", f(t.EpsilonLow), "--epsilon-high", f(t.EpsilonHigh),
		"--beta", f(t.KLBeta), "--aggregation", t.Aggregation,
		"--micro-batch-tokens", strconv.Itoa(t.MicroBatchTokens), "--max-grad-norm", f(t.MaxGradNorm),
		"--weight-decay", f(t.WeightDecay), "--seed", strconv.FormatInt(cfg.Run.Seed, 10),
	}
	if t.FullFinetune {
		args = append(args, "--full-finetune")
	} else {
		args = append(args, "--lora-r", strconv.Itoa(t.LoRAR), "--lora-alpha", strconv.Itoa(t.LoRAAlpha), "--lora-dropout", f(t.LoRADropout))
	}
	return append(args, t.ExtraArgs...)
}

// runTrain wires the config into train.Run.
func runTrain(ctx context.Context, a *app, cfg config.Config, runDir dataset.RunDir, log *zap.Logger) error {
	if cfg.Rollout.GroupSize < 2 && cfg.GRPO.Advantage != grpo.ModeRoleBaseline {
		return fmt.Errorf("train: config key rollout.group_size: a group of %d has no group-relative advantage in %s mode: use 2 or more", cfg.Rollout.GroupSize, cfg.GRPO.Advantage)
	}
	frozen, err := cfg.YAML()
	if err != nil {
		return err
	}
	prompts, err := loadCurriculum(cfg)
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
	judge, closeJudge, err := newJudge(cfg, runDir.Root(), log)
	if err != nil {
		return err
	}
	defer closeJudge()
	args := trainerArgs(cfg, runDir.Root())
	var command []string
	if len(cfg.Train.TrainerCommand) > 0 {
		command = append(slices.Clone(cfg.Train.TrainerCommand), args...)
	}
	bars := a.bars()
	defer bars.Wait()
	bar := bars.Add("steps", int64(cfg.Train.Steps))
	st, err := train.Run(ctx, train.RunOptions{
		Loop: train.LoopOptions{
			Dir: runDir, RunID: cfg.Run.Name, Seed: cfg.Run.Seed, Steps: cfg.Train.Steps, MaxStaleness: cfg.Train.MaxStaleness,
			Prompts: prompts, Mix: cfg.Curriculum.Mix, PromptsPerStep: cfg.Rollout.PromptsPerStep,
			Rollout: ro, Judge: judge, JudgeConcurrency: cfg.Judge.Concurrency,
			Advantage: advantageOptions(cfg.GRPO), Mask: cfg.GRPO.Mask, AdapterPrefix: cfg.Train.AdapterPrefix,
			TrainerTimeout: cfg.Train.TrainerTimeout, MaxFailedFraction: cfg.Train.MaxFailedFraction, Logger: log,
			OnStart: func(done int) { bar.SetCurrent(int64(done)) },
			OnStep: func(m map[string]any) {
				bar.Increment()
				log.Info("step done", zap.Any("step", m["step"]), zap.Any("reward_mean", m["reward_mean"]),
					zap.Any("score_max", m["score_max"]), zap.Any("agreement_rate", m["agreement_rate"]),
					zap.Any("loss", m["trainer/loss"]), zap.Any("sampled_tokens", m["sampled_tokens"]))
			},
		},
		FrozenConfig: frozen, Server: policy, Model: cfg.Policy.Model,
		ServerCommand: cfg.Train.ServerCommand, ServerStartTimeout: cfg.Train.ServerStartTimeout,
		TrainerCommand: command, TrainerHint: append([]string{"python", "-m", "parley_trainer"}, args...),
		Handshake: cfg.Train.Handshake, HTTPAddr: cfg.Train.HTTPAddr, Token: os.Getenv(cfg.Train.TokenEnv), TokenEnv: cfg.Train.TokenEnv,
		OnURL:  func(url string) []string { return []string{"--url", url, "--token-env", cfg.Train.TokenEnv} },
		Logger: log,
	})
	if err != nil {
		return err
	}
	log.Info("training finished", zap.Int("steps", st.Step), zap.String("run", runDir.Root()), zap.String("adapter", st.Adapter))
	return nil
}
