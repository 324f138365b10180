package main

import (
	"github.com/parleyhq/parley/config"
	"go.uber.org/zap"
)

// uses says which servers a command talks to, so that warnDefaults names
// only the keys the command reads.
type uses uint8

// The servers a command may use.
const (
	// usesPolicy: the policy's vLLM servers (policy.endpoints, policy.model).
	usesPolicy uses = 1 << iota
	// usesJudge: the reward judge (judge.base_url, judge.model), when
	// judge.kind asks an LLM (reward.JudgeKind.UsesChat).
	usesJudge
	// usesChatJudge: the judge's chat endpoint whatever judge.kind says
	// (eval pairwise always asks an LLM).
	usesChatJudge
	// usesGenerator: the curriculum generator (generator.base_url,
	// generator.model).
	usesGenerator
)

// warnDefaults says on one line which of the server keys the command uses
// a config left at their defaults (an empty or missing config would
// otherwise send requests to 127.0.0.1:8000 and a paid judge or generator
// without a word); keys the command never reads are not named.
func warnDefaults(cfg config.Config, path string, u uses, log *zap.Logger) {
	var defaulted []zap.Field
	check := func(key string, v any) {
		if !cfg.Given(key) {
			defaulted = append(defaulted, zap.Any(key, v))
		}
	}
	if u&usesPolicy != 0 {
		check("policy.endpoints", cfg.Policy.Endpoints)
		check("policy.model", cfg.Policy.Model)
	}
	if u&usesChatJudge != 0 || (u&usesJudge != 0 && cfg.Judge.Kind.UsesChat()) {
		check("judge.base_url", cfg.Judge.BaseURL)
		check("judge.model", cfg.Judge.Model)
	}
	if u&usesGenerator != 0 {
		check("generator.base_url", cfg.Generator.BaseURL)
		check("generator.model", cfg.Generator.Model)
	}
	if len(defaulted) > 0 {
		msg := "these server keys are at their defaults (not set by the config, PARLEY_* variables or flags)"
		if path == "" {
			msg = "no --config: these server keys are at their defaults"
		}
		log.Warn(msg, defaulted...)
	}
}
