package app

import (
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestSamplingModes: which runs stream and which sample dynamically, with
// the reason logged, naming the key, when the config asks for one the run
// cannot have; and the clamp of rollout.concurrency for a stream.
func TestSamplingModes(t *testing.T) {
	league := map[string]train.LeagueRole{"B": {}}
	series := &train.SeriesOptions{}
	for _, tc := range []struct {
		name            string
		edit            func(*config.Config)
		league          map[string]train.LeagueRole
		series          *train.SeriesOptions
		stream, dynamic bool
		logged          int
	}{
		{"k=0", func(c *config.Config) { c.Train.MaxStaleness = 0 }, nil, nil, false, true, 0},
		{"k=1", func(c *config.Config) { c.Train.MaxStaleness = 1 }, nil, nil, true, true, 0},
		{"k=1, sampling step", func(c *config.Config) { c.Train.MaxStaleness, c.Train.Sampling = 1, config.SamplingStep }, nil, nil, false, true, 0},
		{"k=1, league", func(c *config.Config) { c.Train.MaxStaleness = 1 }, league, nil, true, true, 0},
		{"k=1, series", func(c *config.Config) { c.Train.MaxStaleness = 1 }, nil, series, true, true, 0},
		{"k=0, series", func(c *config.Config) { c.Train.MaxStaleness = 0 }, nil, series, false, false, 1},
		{"k=1, full weights abort", func(c *config.Config) {
			c.Train.MaxStaleness, c.Trainer.FullFinetune, c.Train.WeightSync.PauseMode = 1, true, "abort"
		}, nil, nil, false, true, 1},
		{"role baseline", func(c *config.Config) { c.GRPO.Advantage = grpo.ModeRoleBaseline }, nil, nil, false, false, 1},
		{"keep zero variance", func(c *config.Config) { c.GRPO.KeepZeroVariance = true }, nil, nil, false, false, 1},
		{"dynamic sampling off", func(c *config.Config) { c.Train.DynamicSampling = false }, nil, nil, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			tc.edit(&cfg)
			core, logs := observer.New(zap.InfoLevel)
			log := zap.New(core)
			stream := streaming(cfg, log)
			dynamic := dynamicSampling(cfg, tc.league, tc.series, stream, log)
			if stream != tc.stream || dynamic != tc.dynamic {
				t.Errorf("stream %v, dynamic %v; want %v, %v", stream, dynamic, tc.stream, tc.dynamic)
			}
			if n := logs.Len(); n != tc.logged {
				t.Errorf("%d lines logged, want %d: %v", n, tc.logged, logs.All())
			}
		})
	}

	cfg := config.Default()
	cfg.Policy.Endpoints = []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}
	cfg.Policy.MaxConcurrentPerEndpoint, cfg.Rollout.Concurrency = 8, 40 // 2 × 2 × 8 = 32
	core, logs := observer.New(zap.WarnLevel)
	if n := streamConcurrency(cfg, zap.New(core)); n != 32 || logs.FilterField(zap.String("key", "rollout.concurrency")).Len() != 1 {
		t.Errorf("concurrency 40 on 2 endpoints of 8 = %d with %d warnings, want 32 and a warning naming rollout.concurrency", n, logs.Len())
	}
	cfg.Policy.Endpoints = []string{"dns+http://vllm:8000"}
	if n := streamConcurrency(cfg, zap.NewNop()); n != 40 {
		t.Errorf("concurrency on discovered endpoints = %d, want 40 (their count is not known)", n)
	}
}
