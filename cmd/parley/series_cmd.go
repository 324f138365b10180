package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/rollout"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// newSeriesCmd is `parley series`: repeated games whose state carries over.
func newSeriesCmd(a *cli) *cobra.Command {
	var (
		path, out string
		n         int
	)
	cmd := &cobra.Command{
		Use:   "series --config F --out DIR [--series N]",
		Short: "Play series of repeated games whose state carries over (seed 002's trust), resumably, and write DIR/rollouts for parley report",
		Long: `The game lays out the series (for the multiparty game: N series per scenario
type and trust condition of game.multiparty.conditions, each of
game.multiparty.series_length games, paired across conditions). Every game
is recorded under DIR/series/<series>/ as it ends; run the same command
again to resume an interrupted run. At the end all rollouts go to
DIR/rollouts/step-000000.parquet and the config to DIR/config.yaml, so
'parley report DIR' draws the game's figures and tables.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			if out == "" {
				return fmt.Errorf("series: --out DIR is required")
			}
			sum, err := runSeries(cmd, a, cfg, out, n, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d series, %d games played, %d resumed, %d failed\n", out, sum.Series, sum.Played, sum.Resumed, sum.Failed)
			return nil
		},
	}
	configFlags(cmd, &path)
	cmd.Flags().StringVar(&out, "out", "", "output directory (resumed when it holds the same series)")
	cmd.Flags().IntVar(&n, "series", 1, "series per scenario type and condition")
	return cmd
}

// runSeries wires the config into rollout.RunSeriesTo.
func runSeries(cmd *cobra.Command, a *cli, cfg config.Config, out string, n int, log *zap.Logger) (rollout.SeriesSummary, error) {
	spec, _ := rollout.Lookup(cfg.Game.Env)
	if spec.Series == nil {
		return rollout.SeriesSummary{}, fmt.Errorf("series: the %s game lays out no series", cfg.Game.Env)
	}
	prompts, err := loadCurriculum(cfg)
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
	log.Info("playing series", zap.Int("series", len(plan)), zap.String("out", out))
	return rollout.RunSeriesTo(cmd.Context(), ro, out, plan)
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
