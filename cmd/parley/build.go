package main

import (
	"fmt"
	"os"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// secretFromEnv reads the secret named by the config key's env var; an
// empty name means no secret.
func secretFromEnv(key, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return "", fmt.Errorf("config key %s names the environment variable %s, which is not set", key, name)
	}
	return v, nil
}

func newPolicy(cfg config.Config, log *zap.Logger) (*llm.Client, error) {
	key, err := secretFromEnv("policy.api_key_env", cfg.Policy.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	return llm.New(llm.Options{
		Endpoints:                cfg.Policy.Endpoints,
		APIKey:                   key,
		MaxConcurrentPerEndpoint: cfg.Policy.MaxConcurrentPerEndpoint,
		RequestTimeout:           cfg.Policy.RequestTimeout,
		MaxRetries:               cfg.Policy.MaxRetries,
		HealthInterval:           cfg.Policy.HealthInterval,
		Logger:                   log.Named("policy"),
		JitterSeed:               cfg.Run.Seed,
	})
}

// sampling is the rollout sampling. top_k 0 (off) is sent as -1: a request
// that leaves a field out gets vLLM's --generation-config defaults (top_k 20
// for Qwen3), and the trainer's ratio assumes the full softmax.
func sampling(cfg config.Config) llm.Sampling {
	topK := cfg.Sampling.TopK
	if topK == 0 {
		topK = -1
	}
	return llm.Sampling{
		MaxTokens:   cfg.Sampling.MaxTokens,
		Temperature: cfg.Sampling.Temperature,
		TopP:        cfg.Sampling.TopP,
		TopK:        topK,
	}
}

func chatKwargs(cfg config.Config) map[string]any {
	return map[string]any{"enable_thinking": cfg.Policy.EnableThinking}
}

func newGame(cfg config.Config) rollout.Game {
	if cfg.Game.Env == "single" {
		return rollout.NewSingle(rollout.SingleOptions{Tokens: cfg.Sampling.FinalMaxTokens})
	}
	return rollout.NewDeliberation(rollout.DeliberationOptions{
		MaxRounds:   cfg.Game.MaxRounds,
		Marker:      cfg.Game.AgreementMarker,
		TurnTokens:  cfg.Sampling.MaxTokens,
		FinalTokens: cfg.Sampling.FinalMaxTokens,
	})
}

// loadCurriculum loads the configured prompts (and persona library), keeps
// the configured split, and checks them for the configured game.
func loadCurriculum(cfg config.Config) ([]dataset.Prompt, error) {
	opts := dataset.LoadOptions{RequirePersonas: cfg.Game.Env == "deliberation"}
	if cfg.Curriculum.Personas != "" {
		pairs, err := dataset.LoadPersonaPairs(cfg.Curriculum.Personas)
		if err != nil {
			return nil, fmt.Errorf("config key curriculum.personas: %w", err)
		}
		opts.Personas = pairs
	}
	prompts, err := dataset.LoadPrompts(cfg.Curriculum.Path, opts)
	if err != nil {
		return nil, fmt.Errorf("config key curriculum.path: %w", err)
	}
	if cfg.Curriculum.Split != "" {
		kept := prompts[:0]
		for _, p := range prompts {
			if p.Split == "" || p.Split == cfg.Curriculum.Split {
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			return nil, fmt.Errorf("config key curriculum.split: no prompt of %s is in split %q", cfg.Curriculum.Path, cfg.Curriculum.Split)
		}
		prompts = kept
	}
	return prompts, nil
}

// newJudge builds the configured reward judge; cacheDir holds the judge
// cache ("" for none). The returned func releases it.
func newJudge(cfg config.Config, cacheDir string, log *zap.Logger) (reward.Judge, func(), error) {
	if cfg.Judge.Kind == "rule" {
		j, err := reward.NewRuleJudge(reward.RuleOptions{
			Kind:         cfg.Judge.Rule.Kind,
			Keywords:     cfg.Judge.Rule.Keywords,
			TargetLength: cfg.Judge.Rule.TargetLength,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("config key judge.rule: %w", err)
		}
		return j, func() {}, nil
	}
	j, err := reward.NewCAJudge(reward.CAOptions{ClientOptions: judgeClient(cfg, cacheDir, log)})
	if err != nil {
		return nil, nil, err
	}
	return j, func() { _ = j.Close() }, nil
}

// judgeClient is the judge API configuration; the key is read from the
// environment variable the config names.
func judgeClient(cfg config.Config, cacheDir string, log *zap.Logger) reward.ClientOptions {
	key := ""
	if cfg.Judge.APIKeyEnv != "" {
		key = os.Getenv(cfg.Judge.APIKeyEnv)
		if key == "" {
			log.Warn("the judge's API key variable is not set; sending no key", zap.String("variable", cfg.Judge.APIKeyEnv))
		}
	}
	return reward.ClientOptions{
		BaseURL:                 cfg.Judge.BaseURL,
		Model:                   cfg.Judge.Model,
		APIKey:                  key,
		Concurrency:             cfg.Judge.Concurrency,
		RequestsPerMinute:       cfg.Judge.RequestsPerMinute,
		TokensPerMinute:         cfg.Judge.TokensPerMinute,
		MaxRetries:              cfg.Judge.MaxRetries,
		Timeout:                 cfg.Judge.Timeout,
		CacheDir:                cacheDir,
		DisableStructuredOutput: !cfg.Judge.StructuredOutput,
		Logger:                  log.Named("judge"),
		BackoffBase:             500 * time.Millisecond,
	}
}

// runnerOptions is the rollout runner the config describes; the training
// loop sets the step, policy version and adapter per step.
func runnerOptions(cfg config.Config, policy rollout.Policy, log *zap.Logger) rollout.RunnerOptions {
	return rollout.RunnerOptions{
		Game: newGame(cfg), Policy: policy, Model: cfg.Policy.Model,
		Sampling: sampling(cfg), ChatTemplateKwargs: chatKwargs(cfg),
		GroupSize: cfg.Rollout.GroupSize, Concurrency: cfg.Rollout.Concurrency,
		Seed: cfg.Run.Seed, RunID: cfg.Run.Name, Logger: log,
		History: rollout.HistoryMode(cfg.Rollout.History),
	}
}

// advantageOptions maps the config's grpo section.
func advantageOptions(g config.GRPO) grpo.AdvantageOptions {
	return grpo.AdvantageOptions{Mode: g.Advantage, Epsilon: g.Epsilon, KeepZeroVariance: g.KeepZeroVariance, BaselineMomentum: g.BaselineMomentum}
}
