package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// Series plays n series per condition of the config's game into out
// (rollout.RunSeriesTo), resuming what out holds and playing again the
// games recorded as failed, with a progress bar of its games (those found
// recorded count as done). A game that fails in this run is an error
// (after all are played and the rollouts written), with the counts.
func Series(ctx context.Context, cfg config.Config, env Env, out string, n int) (rollout.SeriesSummary, error) {
	log := env.log()
	if out == "" {
		return rollout.SeriesSummary{}, fmt.Errorf("series: --out DIR is required")
	}
	spec, _ := rollout.Lookup(cfg.Game.Env)
	if spec.Series == nil {
		return rollout.SeriesSummary{}, fmt.Errorf("series: the %s game lays out no series", cfg.Game.Env)
	}
	prompts, err := LoadCurriculum(cfg)
	if err != nil {
		return rollout.SeriesSummary{}, err
	}
	plan, err := spec.Series(cfg.Game.Active(), prompts, n, cfg.Run.Seed)
	if err != nil {
		return rollout.SeriesSummary{}, fmt.Errorf("series: %w", err)
	}
	if err := freezeConfig(cfg, out); err != nil {
		return rollout.SeriesSummary{}, err
	}
	policy, err := newPolicy(cfg, log)
	if err != nil {
		return rollout.SeriesSummary{}, err
	}
	defer policy.Close()
	ro, closePlayers, err := runnerOptions(cfg, policy, log)
	if err != nil {
		return rollout.SeriesSummary{}, err
	}
	defer closePlayers()
	games := 0
	for _, s := range plan {
		games += len(s.Games)
	}
	log.Info("playing series", zap.Int("series", len(plan)), zap.Int("games", games), zap.String("out", out))
	bars := env.bars()
	bar := bars.Add("games", int64(games))
	ro.OnGames = func(n int) {
		for range n {
			bar.Increment()
		}
	}
	sum, err := rollout.RunSeriesTo(ctx, ro, out, plan)
	if err != nil {
		bar.Abort()
	}
	bars.Wait()
	if err == nil && sum.Failed > 0 {
		err = fmt.Errorf("series: %d of %d games played failed (recorded as failed under %s; run the same command again to play them, and the games after them, again); first error: %w",
			sum.Failed, sum.Played, filepath.Join(out, "series"), sum.FirstErr)
	}
	return sum, err
}

// freezeConfig writes the config to DIR/config.yaml unless one is there.
func freezeConfig(cfg config.Config, out string) error {
	p := dataset.RunDir(out).ConfigPath()
	if _, err := os.Stat(p); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("series: %w", err)
	}
	b, err := cfg.YAML()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("series: %w", err)
	}
	return fsutil.WriteFileAtomic(p, b, 0o644)
}
