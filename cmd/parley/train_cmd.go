package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/proc"
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
			runDir := grpo.RunDir(cfg.RunDir())
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

// trainerArgs builds the PyTorch trainer's command line from the config.
func trainerArgs(cfg config.Config, runDir, url string) []string {
	t := cfg.Trainer
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := append([]string(nil), cfg.Train.TrainerCommand...)
	args = append(args,
		"--run-dir", runDir, "--model", t.Model, "--mode", cfg.Train.Handshake,
		"--lr", f(t.LR), "--epsilon-low", f(t.EpsilonLow), "--epsilon-high", f(t.EpsilonHigh),
		"--beta", f(t.KLBeta), "--tis-cap", f(t.TISCap), "--aggregation", t.Aggregation,
		"--micro-batch-tokens", strconv.Itoa(t.MicroBatchTokens), "--max-grad-norm", f(t.MaxGradNorm),
		"--weight-decay", f(t.WeightDecay), "--seed", strconv.FormatInt(cfg.Run.Seed, 10),
	)
	if t.FullFinetune {
		args = append(args, "--full-finetune")
	} else {
		args = append(args, "--lora-r", strconv.Itoa(t.LoRAR), "--lora-alpha", strconv.Itoa(t.LoRAAlpha), "--lora-dropout", f(t.LoRADropout))
	}
	if cfg.Train.Handshake == "http" {
		args = append(args, "--url", url, "--token-env", cfg.Train.TokenEnv)
	}
	return append(args, t.ExtraArgs...)
}

func runTrain(ctx context.Context, a *app, cfg config.Config, runDir grpo.RunDir, log *zap.Logger) error {
	if cfg.Rollout.GroupSize < 2 && cfg.GRPO.Advantage != "role_baseline" {
		return fmt.Errorf("train: config key rollout.group_size: a group of %d has no group-relative advantage in %s mode: use 2 or more", cfg.Rollout.GroupSize, cfg.GRPO.Advantage)
	}
	if err := runDir.Create(); err != nil {
		return err
	}
	if _, err := os.Stat(runDir.ConfigPath()); errors.Is(err, fs.ErrNotExist) {
		b, err := cfg.YAML()
		if err != nil {
			return err
		}
		if err := fsutil.WriteFileAtomic(runDir.ConfigPath(), b, 0o644); err != nil {
			return fmt.Errorf("train: freeze config: %w", err)
		}
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

	var children []*proc.Supervisor
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].Stop(10 * time.Second)
		}
	}()
	if len(cfg.Train.ServerCommand) > 0 {
		srv, err := proc.Start(proc.Options{Name: "inference server", Argv: cfg.Train.ServerCommand,
			LogPath: filepath.Join(runDir.Root(), "server.log"), Restart: true, MaxRestarts: 5, Logger: log})
		if err != nil {
			return err
		}
		children = append(children, srv)
		hctx, cancel := context.WithTimeout(ctx, cfg.Train.ServerStartTimeout)
		err = srv.WaitHealthy(hctx, policy.Health, 500*time.Millisecond)
		cancel()
		if err != nil {
			return fmt.Errorf("train: inference server (train.server_command) never became healthy: %w; see %s", err, filepath.Join(runDir.Root(), "server.log"))
		}
	} else if err := policy.Health(ctx); err != nil {
		return fmt.Errorf("train: the policy server is not healthy (policy.endpoints): %w", err)
	}
	models, err := policy.Models(ctx)
	if err != nil {
		return fmt.Errorf("train: list the served models: %w", err)
	}
	if !slices.Contains(models, cfg.Policy.Model) {
		return fmt.Errorf("train: policy.model %q is not served by policy.endpoints (they serve %v)", cfg.Policy.Model, models)
	}

	url := ""
	var env []string
	if cfg.Train.Handshake == "http" {
		token := os.Getenv(cfg.Train.TokenEnv)
		if token == "" {
			if len(cfg.Train.TrainerCommand) == 0 {
				return fmt.Errorf("train: the HTTP handshake needs a bearer token in %s (train.token_env) that the remote trainer also has", cfg.Train.TokenEnv)
			}
			if token, err = grpo.NewToken(); err != nil {
				return err
			}
		}
		hs, err := grpo.NewHandshakeServer(grpo.HandshakeOptions{Dir: runDir.Root(), Token: token, Addr: cfg.Train.HTTPAddr, Logger: log.Named("handshake")})
		if err != nil {
			return err
		}
		defer hs.Close()
		url = hs.URL()
		env = append(env, cfg.Train.TokenEnv+"="+token)
		log.Info("handshake server listening", zap.String("url", url))
	}

	var trainerAlive, trainerGone func() error
	targs := trainerArgs(cfg, runDir.Root(), url)
	if len(cfg.Train.TrainerCommand) > 0 {
		tr, err := proc.Start(proc.Options{Name: "trainer", Argv: targs, Env: env,
			LogPath: filepath.Join(runDir.Root(), "trainer.out"), Restart: true, MaxRestarts: 10, Logger: log})
		if err != nil {
			return err
		}
		children = append(children, tr)
		trainerAlive, trainerGone = tr.Alive, tr.GaveUp
	} else {
		log.Info("waiting for an external trainer; start it with", zap.Strings("command", append([]string{"python", "-m", "parley_trainer"}, targs...)))
	}

	judge, closeJudge, err := newJudge(cfg, runDir.Root(), log)
	if err != nil {
		return err
	}
	defer closeJudge()

	bars := a.bars()
	defer bars.Wait()
	bar := bars.Add("steps", int64(cfg.Train.Steps))
	loop, err := grpo.NewLoop(grpo.LoopOptions{
		Dir: runDir, RunID: cfg.Run.Name, Seed: cfg.Run.Seed, Steps: cfg.Train.Steps, MaxStaleness: cfg.Train.MaxStaleness,
		Prompts: prompts, Mix: cfg.Curriculum.Mix, PromptsPerStep: cfg.Rollout.PromptsPerStep,
		Rollout: runnerOptions(cfg, policy, log),
		Judge:   judge, JudgeConcurrency: cfg.Judge.Concurrency,
		Advantage: advantageOptions(cfg.GRPO),
		Mask:      cfg.GRPO.Mask,
		Adapters:  policy, AdapterPrefix: cfg.Train.AdapterPrefix,
		TrainerTimeout: cfg.Train.TrainerTimeout, TrainerAlive: trainerAlive, TrainerGone: trainerGone,
		MaxFailedFraction: cfg.Train.MaxFailedFraction,
		Logger:            log,
		OnStep: func(m map[string]any) {
			bar.Increment()
			log.Info("step done", zap.Any("step", m["step"]), zap.Any("reward_mean", m["reward_mean"]),
				zap.Any("score_max", m["score_max"]), zap.Any("agreement_rate", m["agreement_rate"]),
				zap.Any("loss", m["trainer/loss"]), zap.Any("sampled_tokens", m["sampled_tokens"]))
		},
	})
	if err != nil {
		return err
	}
	for i := 0; i < loop.State().Step; i++ {
		bar.Increment()
	}
	if err := loop.Run(ctx); err != nil {
		return err
	}
	log.Info("training finished", zap.Int("steps", loop.State().Step), zap.String("run", runDir.Root()),
		zap.String("adapter", loop.State().Adapter))
	return nil
}
