package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Validate checks every value, returning all problems joined; each names
// its key path.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	oneOf := func(key, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
	positive := func(key string, v int) {
		if v <= 0 {
			bad(key, "must be positive, got %d", v)
		}
	}
	nonNegative := func(key string, v int) {
		if v < 0 {
			bad(key, "must be zero or more, got %d", v)
		}
	}
	envName := func(key, v string, required bool) {
		if v == "" {
			if required {
				bad(key, "must name an environment variable")
			}
			return
		}
		for _, r := range v {
			if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				bad(key, "%q is not an environment variable name (put the secret in the environment, never in the config)", v)
				return
			}
		}
	}

	if c.Run.Name == "" || strings.ContainsAny(c.Run.Name, `/\`) || c.Run.Name == "." || c.Run.Name == ".." {
		bad("run.name", "must be a plain directory name, got %q", c.Run.Name)
	}
	if c.Run.Dir == "" {
		bad("run.dir", "must not be empty")
	}

	if len(c.Policy.Endpoints) == 0 {
		bad("policy.endpoints", "must list at least one base URL")
	}
	for i, e := range c.Policy.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(fmt.Sprintf("policy.endpoints[%d]", i), "%q is not an http(s) base URL", redactURL(e))
		} else if u.User != nil {
			bad(fmt.Sprintf("policy.endpoints[%d]", i), "credentials in the URL: name an environment variable in policy.api_key_env instead")
		}
	}
	for key, args := range map[string][]string{"train.trainer_command": c.Train.TrainerCommand, "train.server_command": c.Train.ServerCommand, "trainer.extra_args": c.Trainer.ExtraArgs} {
		if r := redactArgs(args); fmt.Sprint(r) != fmt.Sprint(args) {
			bad(key, "holds a secret on the command line (%v): pass it through the environment (vLLM reads VLLM_API_KEY)", r)
		}
	}
	if c.Policy.Model == "" {
		bad("policy.model", "must not be empty")
	}
	envName("policy.api_key_env", c.Policy.APIKeyEnv, false)
	positive("policy.max_concurrent_per_endpoint", c.Policy.MaxConcurrentPerEndpoint)
	if c.Policy.RequestTimeout <= 0 {
		bad("policy.request_timeout", "must be positive, got %s", c.Policy.RequestTimeout)
	}
	nonNegative("policy.max_retries", c.Policy.MaxRetries)

	if c.Sampling.Temperature < 0 || c.Sampling.Temperature > 5 {
		bad("sampling.temperature", "must be in [0, 5], got %g", c.Sampling.Temperature)
	}
	if c.Sampling.TopP <= 0 || c.Sampling.TopP > 1 {
		bad("sampling.top_p", "must be in (0, 1], got %g", c.Sampling.TopP)
	}
	nonNegative("sampling.top_k", c.Sampling.TopK)
	positive("sampling.max_tokens", c.Sampling.MaxTokens)
	positive("sampling.final_max_tokens", c.Sampling.FinalMaxTokens)

	oneOf("game.env", c.Game.Env, "deliberation", "single")
	if c.Game.MaxRounds < 1 || c.Game.MaxRounds > 100 {
		bad("game.max_rounds", "must be in [1, 100], got %d", c.Game.MaxRounds)
	}
	if strings.TrimSpace(c.Game.AgreementMarker) == "" {
		bad("game.agreement_marker", "must not be empty")
	}

	if c.Curriculum.Path == "" {
		bad("curriculum.path", "must name a prompts file or builtin:dilemmas / builtin:open-ended")
	}
	var mixSum float64
	for k, w := range c.Curriculum.Mix {
		switch k {
		case "professional", "interpersonal", "micro_ethics", "open_ended":
		default:
			bad("curriculum.mix."+k, "unknown category (professional, interpersonal, micro_ethics, open_ended)")
		}
		if w < 0 {
			bad("curriculum.mix."+k, "weight must be zero or more, got %g", w)
		}
		mixSum += w
	}
	if len(c.Curriculum.Mix) > 0 && mixSum <= 0 {
		bad("curriculum.mix", "weights must not all be zero")
	}
	if c.Curriculum.Split != "" {
		oneOf("curriculum.split", c.Curriculum.Split, "train", "eval")
	}

	positive("rollout.group_size", c.Rollout.GroupSize)
	positive("rollout.prompts_per_step", c.Rollout.PromptsPerStep)
	positive("rollout.concurrency", c.Rollout.Concurrency)

	oneOf("judge.kind", c.Judge.Kind, "ca", "rule")
	if c.Judge.Kind == "ca" {
		if u, err := url.Parse(c.Judge.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("judge.base_url", "%q is not an http(s) URL", redactURL(c.Judge.BaseURL))
		} else if u.User != nil {
			bad("judge.base_url", "credentials in the URL: name an environment variable in judge.api_key_env instead")
		}
		if c.Judge.Model == "" {
			bad("judge.model", "must not be empty")
		}
		envName("judge.api_key_env", c.Judge.APIKeyEnv, false)
		positive("judge.concurrency", c.Judge.Concurrency)
		if c.Judge.Timeout <= 0 {
			bad("judge.timeout", "must be positive, got %s", c.Judge.Timeout)
		}
	}
	nonNegative("judge.requests_per_minute", c.Judge.RequestsPerMinute)
	nonNegative("judge.tokens_per_minute", c.Judge.TokensPerMinute)
	nonNegative("judge.max_retries", c.Judge.MaxRetries)
	if c.Judge.Kind == "rule" {
		oneOf("judge.rule.kind", c.Judge.Rule.Kind, "keywords", "keyword_share", "length", "agreement")
		if (c.Judge.Rule.Kind == "keywords" || c.Judge.Rule.Kind == "keyword_share") && len(c.Judge.Rule.Keywords) == 0 {
			bad("judge.rule.keywords", "must list at least one keyword for the keywords rule")
		}
		if c.Judge.Rule.Kind == "length" && c.Judge.Rule.TargetLength <= 0 {
			bad("judge.rule.target_length", "must be positive for the length rule")
		}
	}

	if u, err := url.Parse(c.Generator.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("generator.base_url", "%q is not an http(s) URL", redactURL(c.Generator.BaseURL))
	}
	if c.Generator.Model == "" {
		bad("generator.model", "must not be empty")
	}
	envName("generator.api_key_env", c.Generator.APIKeyEnv, false)
	positive("generator.concurrency", c.Generator.Concurrency)
	nonNegative("generator.requests_per_minute", c.Generator.RequestsPerMinute)
	nonNegative("generator.tokens_per_minute", c.Generator.TokensPerMinute)
	nonNegative("generator.max_retries", c.Generator.MaxRetries)
	if c.Generator.Timeout <= 0 {
		bad("generator.timeout", "must be positive, got %s", c.Generator.Timeout)
	}
	if c.Generator.Temperature < 0 || c.Generator.Temperature > 2 {
		bad("generator.temperature", "must be in [0, 2], got %g", c.Generator.Temperature)
	}
	positive("generator.max_tokens", c.Generator.MaxTokens)
	if c.Generator.BatchSize < 1 || c.Generator.BatchSize > 50 {
		bad("generator.batch_size", "must be in [1, 50], got %d", c.Generator.BatchSize)
	}
	positive("generator.min_words", c.Generator.MinWords)
	if c.Generator.MaxWords < c.Generator.MinWords {
		bad("generator.max_words", "must be at least generator.min_words (%d), got %d", c.Generator.MinWords, c.Generator.MaxWords)
	}
	if c.Generator.NearDupThreshold <= 0 || c.Generator.NearDupThreshold > 1 {
		bad("generator.near_dup_threshold", "must be in (0, 1], got %g", c.Generator.NearDupThreshold)
	}
	if c.Generator.EvalFraction < 0 || c.Generator.EvalFraction >= 1 {
		bad("generator.eval_fraction", "must be in [0, 1), got %g", c.Generator.EvalFraction)
	}
	var genMixSum float64
	for k, w := range c.Generator.Mix {
		switch k {
		case "professional", "interpersonal", "micro_ethics":
		default:
			bad("generator.mix."+k, "unknown dilemma category (professional, interpersonal, micro_ethics)")
		}
		if w < 0 {
			bad("generator.mix."+k, "weight must be zero or more, got %g", w)
		}
		genMixSum += w
	}
	if len(c.Generator.Mix) > 0 && genMixSum <= 0 {
		bad("generator.mix", "weights must not all be zero")
	}

	oneOf("grpo.advantage", c.GRPO.Advantage, "group", "group_mean", "role_baseline")
	if c.GRPO.Epsilon <= 0 || c.GRPO.Epsilon > 1 {
		bad("grpo.epsilon", "must be in (0, 1], got %g", c.GRPO.Epsilon)
	}
	if c.GRPO.BaselineMomentum < 0 || c.GRPO.BaselineMomentum >= 1 {
		bad("grpo.baseline_momentum", "must be in [0, 1), got %g", c.GRPO.BaselineMomentum)
	}
	oneOf("grpo.mask", c.GRPO.Mask, "dialogue", "dialogue+final", "final")
	if c.Game.Env == "single" && c.GRPO.Mask == "dialogue" {
		bad("grpo.mask", "the single-agent game has no dialogue tokens: use final or dialogue+final")
	}

	positive("train.steps", c.Train.Steps)
	if c.Train.MaxStaleness != 0 && c.Train.MaxStaleness != 1 {
		bad("train.max_staleness", "must be 0 or 1, got %d", c.Train.MaxStaleness)
	}
	oneOf("train.handshake", c.Train.Handshake, "file", "http")
	if _, _, err := net.SplitHostPort(c.Train.HTTPAddr); err != nil {
		bad("train.http_addr", "%q is not host:port", c.Train.HTTPAddr)
	}
	envName("train.token_env", c.Train.TokenEnv, c.Train.Handshake == "http")
	if c.Train.TrainerTimeout <= 0 {
		bad("train.trainer_timeout", "must be positive, got %s", c.Train.TrainerTimeout)
	}
	if c.Train.AdapterPrefix == "" || strings.ContainsAny(c.Train.AdapterPrefix, `/\ `) {
		bad("train.adapter_prefix", "must be a plain name, got %q", c.Train.AdapterPrefix)
	}
	if c.Train.EvalEvery != 0 {
		bad("train.eval_every", "evaluation passes inside the loop are not implemented yet: set 0 and use parley eval pairwise on checkpoints")
	}
	if c.Train.MaxFailedFraction <= 0 || c.Train.MaxFailedFraction > 1 {
		bad("train.max_failed_fraction", "must be in (0, 1], got %g", c.Train.MaxFailedFraction)
	}
	if c.Train.ServerStartTimeout <= 0 {
		bad("train.server_start_timeout", "must be positive, got %s", c.Train.ServerStartTimeout)
	}
	if len(c.Train.TrainerCommand) > 0 && strings.TrimSpace(c.Trainer.Model) == "" {
		bad("trainer.model", "must name the base model folder the trainer loads (train.trainer_command is set)")
	}
	if c.Trainer.FullFinetune {
		bad("trainer.full_finetune", "full fine-tuning cannot be hot-loaded into vLLM (only LoRA adapters can): use LoRA")
	}

	if c.Trainer.LR <= 0 || c.Trainer.LR > 1 {
		bad("trainer.lr", "must be in (0, 1], got %g", c.Trainer.LR)
	}
	if c.Trainer.EpsilonLow <= 0 || c.Trainer.EpsilonLow >= 1 {
		bad("trainer.epsilon_low", "must be in (0, 1), got %g", c.Trainer.EpsilonLow)
	}
	if c.Trainer.EpsilonHigh <= 0 {
		bad("trainer.epsilon_high", "must be positive, got %g", c.Trainer.EpsilonHigh)
	}
	if c.Trainer.KLBeta < 0 {
		bad("trainer.kl_beta", "must be zero or more, got %g", c.Trainer.KLBeta)
	}
	if c.Trainer.TISCap < 0 || math.IsNaN(c.Trainer.TISCap) || math.IsInf(c.Trainer.TISCap, 0) {
		bad("trainer.tis_cap", "must be zero (off) or a positive cap, got %g", c.Trainer.TISCap)
	}
	oneOf("trainer.aggregation", c.Trainer.Aggregation, "token_mean", "seq_mean_token_mean", "dr_grpo")
	if !c.Trainer.FullFinetune {
		positive("trainer.lora_r", c.Trainer.LoRAR)
		positive("trainer.lora_alpha", c.Trainer.LoRAAlpha)
	}
	if c.Trainer.LoRADropout < 0 || c.Trainer.LoRADropout >= 1 {
		bad("trainer.lora_dropout", "must be in [0, 1), got %g", c.Trainer.LoRADropout)
	}
	positive("trainer.micro_batch_tokens", c.Trainer.MicroBatchTokens)
	if c.Trainer.MaxGradNorm <= 0 {
		bad("trainer.max_grad_norm", "must be positive, got %g", c.Trainer.MaxGradNorm)
	}

	oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf("log.format", c.Log.Format, "auto", "console", "json")
	return errors.Join(errs...)
}

// RunDir is the run's directory, Dir/Name.
func (c Config) RunDir() string { return filepath.Join(c.Run.Dir, c.Run.Name) }

// redactURL hides a URL's user information (credentials).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

// Redacted returns a copy fit to print or store: credentials in URLs are
// replaced. Secrets themselves never live in the config, only the names of
// the environment variables that hold them.
func (c Config) Redacted() Config {
	out := c
	out.Policy.Endpoints = make([]string, len(c.Policy.Endpoints))
	for i, e := range c.Policy.Endpoints {
		out.Policy.Endpoints[i] = redactURL(e)
	}
	out.Judge.BaseURL = redactURL(c.Judge.BaseURL)
	out.Train.TrainerCommand = redactArgs(c.Train.TrainerCommand)
	out.Train.ServerCommand = redactArgs(c.Train.ServerCommand)
	out.Trainer.ExtraArgs = redactArgs(c.Trainer.ExtraArgs)
	out.Generator.BaseURL = redactURL(c.Generator.BaseURL)
	return out
}

// redactArgs hides the values of secret-looking flags in a command line
// (--api-key X, --token=X, …); commands should take secrets from the
// environment instead (vLLM reads VLLM_API_KEY).
func redactArgs(args []string) []string {
	if args == nil {
		return nil
	}
	secret := func(flag string) bool {
		f := strings.ToLower(flag)
		return strings.HasPrefix(f, "-") && (strings.Contains(f, "key") || strings.Contains(f, "token") ||
			strings.Contains(f, "secret") || strings.Contains(f, "password"))
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if name, _, ok := strings.Cut(a, "="); ok && secret(name) {
			out[i] = name + "=REDACTED"
		} else if i > 0 && secret(args[i-1]) && !strings.Contains(args[i-1], "=") && !strings.HasPrefix(a, "-") {
			out[i] = "REDACTED"
		}
	}
	return out
}

// YAML renders the config (redacted) as YAML.
func (c Config) YAML() ([]byte, error) {
	b, err := yaml.Marshal(c.Redacted())
	if err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	return b, nil
}
