package main

import (
	"github.com/parleyhq/parley/reward"

	"github.com/parleyhq/parley/config"
	"go.uber.org/zap"
)

// warnDefaults says on one line which server and judge keys a config left
// at their defaults (an empty or missing config would otherwise send
// requests to 127.0.0.1:8000 and a paid judge without a word).
func warnDefaults(cfg config.Config, path string, log *zap.Logger) {
	var defaulted []zap.Field
	check := func(key string, v any) {
		if !cfg.Given(key) {
			defaulted = append(defaulted, zap.Any(key, v))
		}
	}
	check("policy.endpoints", cfg.Policy.Endpoints)
	check("policy.model", cfg.Policy.Model)
	if cfg.Judge.Kind == reward.JudgeCA {
		check("judge.base_url", cfg.Judge.BaseURL)
		check("judge.model", cfg.Judge.Model)
	}
	if len(defaulted) > 0 {
		msg := "these server keys are at their defaults (not set by the config, PARLEY_* variables or flags)"
		if path == "" {
			msg = "no --config: these server keys are at their defaults"
		}
		log.Warn(msg, defaulted...)
	}
}
