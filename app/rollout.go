package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/summary"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// reportRollouts prints the rollout summary and writes OUT/summary.json;
// an interrupted run, or one past the failure threshold, is an error.
func reportRollouts(env Env, sum rollout.Summary, st llm.Stats, out string, maxFailed float64) error {
	log := env.log()
	env.summarize(summary.New("rollout").
		Add("rollouts", sum.Rollouts).AddIf(sum.Failed > 0, "failed", sum.Failed).AddIf(sum.Interrupted > 0, "interrupted", sum.Interrupted).
		Add("agreement rate", sum.AgreementRate).Add("rounds to agreement", sum.RoundsToAgree).
		Add("sampled tokens", sum.SampledTokens).Add("prompt tokens sent", sum.PromptTokensSent).
		Add("prefix breaks", sum.PrefixBreaks).Add("sequences per rollout", sum.SequencesPerRollout).
		Add("trainer tokens per sampled", sum.TrainerTokensPerSampled).
		Add("requests", sum.Requests).AddIf(st.Retries > 0, "retries", st.Retries).
		Add("elapsed", sum.Elapsed).Add("rollouts per second", sum.PerSecond).
		Add("output", filepath.Join(out, "rollouts.parquet")))
	for cause, n := range sum.Errors {
		log.Warn("rollouts failed", zap.Int("count", n), zap.String("cause", cause))
	}
	b, _ := json.MarshalIndent(sum, "", "  ")
	if err := fsutil.WriteFileAtomic(filepath.Join(out, "summary.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("rollout: write summary: %w", err)
	}
	if sum.Interrupted > 0 {
		return fmt.Errorf("rollout: interrupted: %d rollouts written to %s, %d not run (the same command resumes it): %w", sum.Rollouts, out, sum.Interrupted, context.Canceled)
	}
	if float64(sum.Failed) > maxFailed*float64(max(sum.Rollouts, 1)) {
		return fmt.Errorf("rollout: %d of %d rollouts failed, more than train.max_failed_fraction %g (they are in %s, marked failed); first error: %w",
			sum.Failed, sum.Rollouts, maxFailed, out, sum.FirstErr)
	}
	return nil
}

// rolloutJob is one set of rollouts streamed to a parquet file.
type rolloutJob struct {
	opts    rollout.RunnerOptions
	prompts []dataset.Prompt
	path    string
	log     *zap.Logger
	// keep, if set, receives every written rollout (for judging in memory).
	keep func(*dataset.Rollout)
}

// runRollouts plays the rollouts and streams them to job.path, closing the
// file (valid, holding what finished) even when interrupted.
func runRollouts(ctx context.Context, env Env, job rolloutJob) (rollout.Summary, error) {
	runner, err := rollout.NewRunner(job.opts)
	if err != nil {
		return rollout.Summary{}, err
	}
	if err := runner.Check(ctx); err != nil {
		return rollout.Summary{}, err
	}
	w, err := dataset.NewRolloutWriter(job.path, dataset.RolloutWriterOptions{Logger: job.log})
	if err != nil {
		return rollout.Summary{}, err
	}
	for _, r := range job.opts.Resume {
		if err := w.Write(r); err != nil {
			w.Abort()
			return rollout.Summary{}, err
		}
	}
	bars := env.bars()
	bar := bars.Add("rollouts", int64(len(job.prompts)*job.opts.GroupSize))
	bar.SetCurrent(int64(len(job.opts.Resume)))
	sum, runErr := runner.Run(ctx, job.prompts, func(r *dataset.Rollout) error {
		bar.Increment()
		if job.keep != nil {
			job.keep(r)
		}
		return w.Write(*r)
	})
	if sum.Interrupted > 0 {
		bar.Abort()
	}
	bars.Wait()
	if runErr != nil {
		w.Abort()
		return sum, runErr
	}
	if err := w.Close(); err != nil {
		return sum, err
	}
	return sum, nil
}

// RolloutOptions are `parley rollout`'s settings beside the config.
type RolloutOptions struct {
	// Out is the output directory; Force replaces what it holds, else the
	// rollouts an interrupted run left there are resumed.
	Out   string
	Force bool
	// Prompts draws that many rows with the curriculum mix (0: every row
	// once); GroupSize overrides rollout.group_size when positive.
	Prompts, GroupSize int
}

// Rollout samples the config's game on its curriculum into
// OUT/rollouts.parquet and writes OUT/summary.json.
func Rollout(ctx context.Context, cfg config.Config, env Env, o RolloutOptions) error {
	log := env.log()
	if o.Out == "" {
		return fmt.Errorf("rollout: --out DIR is required")
	}
	path := filepath.Join(o.Out, "rollouts.parquet")
	var resume []dataset.Rollout
	if _, err := os.Stat(path); err == nil && !o.Force {
		// An interrupted run's: go on from what it finished.
		if resume, err = dataset.ReadAllRollouts(path); err != nil {
			return fmt.Errorf("rollout: resume %s (or pass --force to replace it): %w", path, err)
		}
	} else if err := checkOut(o.Out, o.Force); err != nil {
		return fmt.Errorf("rollout: --out: %w", err)
	}
	if o.GroupSize > 0 {
		cfg.Rollout.GroupSize = o.GroupSize
	}
	rows, err := LoadCurriculum(cfg)
	if err != nil {
		return err
	}
	if o.Prompts > 0 {
		rows = rollout.SelectPrompts(rows, cfg.Curriculum.Mix, o.Prompts, cfg.Run.Seed, 0)
	}
	policy, err := newPolicy(cfg, log)
	if err != nil {
		return err
	}
	defer policy.Close()
	if err := preflightPolicy(ctx, policy, cfg.Policy.Model); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	ro, closePlayers, err := runnerOptions(cfg, policy, log)
	if err != nil {
		return err
	}
	defer closePlayers()
	if err := checkResume(resume, rows, ro); err != nil {
		return fmt.Errorf("rollout: %s holds rollouts of another job (%w): run the same command as before to resume it, or pass --force to replace it", path, err)
	}
	if len(resume) > 0 {
		log.Info("resuming", zap.String("out", path), zap.Int("rollouts", len(resume)), zap.Int("left", len(rows)*ro.GroupSize-len(resume)))
	}
	ro.Resume = resume
	sum, err := runRollouts(ctx, env, rolloutJob{opts: ro, prompts: rows, path: path, log: log})
	if err != nil {
		return err
	}
	return reportRollouts(env, sum, policy.Stats(), o.Out, cfg.Train.MaxFailedFraction)
}

// checkResume checks that the rollouts an interrupted `parley rollout` left
// are of this job: each is rollout Index of group GroupID of the prompt
// rows, with that row's id, the game and the seed this run would play it
// with, and none is there twice.
func checkResume(done []dataset.Rollout, rows []dataset.Prompt, ro rollout.RunnerOptions) error {
	seen := make(map[string]bool, len(done))
	groups := make(map[string]int, len(rows))
	for g := range rows {
		groups[rollout.GroupID(ro.Step, g)] = g
	}
	for _, r := range done {
		g, ok := groups[r.GroupID]
		switch {
		case !ok || r.Index < 0 || int(r.Index) >= ro.GroupSize:
			return fmt.Errorf("rollout %s is not one of %d prompts × %d", r.RolloutID, len(rows), ro.GroupSize)
		case r.PromptID != rows[g].ID:
			return fmt.Errorf("rollout %s plays prompt %s, this run's group plays %s", r.RolloutID, r.PromptID, rows[g].ID)
		case r.Env != ro.Game.Name():
			return fmt.Errorf("rollout %s plays game %s, this run %s", r.RolloutID, r.Env, ro.Game.Name())
		case r.Seed != rollout.DeriveSeed(ro.Seed, r.GroupID, int64(r.Index)):
			return fmt.Errorf("rollout %s was seeded otherwise (another run.seed)", r.RolloutID)
		case seen[r.RolloutID]:
			return fmt.Errorf("rollout %s is there twice", r.RolloutID)
		}
		seen[r.RolloutID] = true
	}
	return nil
}
