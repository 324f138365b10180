package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/harness"
)

// benchDefaults fills the bench options the flags left unset from the
// config: the seed (unless --seed was given), the thinking mode and the
// concurrency.
func benchDefaults(o *harness.BenchOptions, cfg config.Config, seedGiven bool) {
	if !seedGiven {
		o.Seed = cfg.Run.Seed
	}
	if o.Mode == "" {
		o.Mode = harness.ModeNonThinking
		if cfg.Policy.EnableThinking {
			o.Mode = harness.ModeThinking
		}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = cfg.Rollout.Concurrency
	}
}

// EnvPython names the environment variable that gives the interpreter of
// parley's Python environment when --python is not given (the Makefile
// sets it to the venv's).
const EnvPython = "PARLEY_PYTHON"

// benchPython is the interpreter the math-verify scorer and the Python
// judge (judge.python.interpreter) run: flag, else
// $PARLEY_PYTHON, else .venv/bin/python when there is one (make venv's),
// else python3.
func benchPython(flag string) string {
	if flag != "" {
		return flag
	}
	if p := os.Getenv(EnvPython); p != "" {
		return p
	}
	if _, err := os.Stat(filepath.Join(".venv", "bin", "python")); err == nil {
		return filepath.Join(".venv", "bin", "python")
	}
	return "python3"
}

// Bench runs a benchmark check on the config's policy (or scores
// responses offline) and prints its table (harness.RunBench). python is
// the --python flag: the interpreter of the math-verify scorer (see
// benchPython).
func Bench(ctx context.Context, cfg config.Config, env Env, o harness.BenchOptions, seedGiven, force bool, python string) error {
	log := env.log()
	o.Logger, o.Progress = log, env.progress
	benchDefaults(&o, cfg, seedGiven)
	name, err := harness.BenchmarkName(o.Benchmark)
	if err != nil {
		return err
	}
	scorer, err := harness.BenchScorer(name, o.Scorer)
	if err != nil {
		return err
	}
	if scorer == bench.ScorerMathVerify {
		o.MathVerify = &bench.MathVerify{Python: benchPython(python)}
	}
	if err := checkOut(filepath.Join(o.Out, harness.ResultsFile(name, scorer)), force); err != nil {
		return fmt.Errorf("bench: --out: %w", err)
	}
	if len(o.Responses) == 0 {
		policy, err := newPolicy(cfg, log)
		if err != nil {
			return err
		}
		defer policy.Close()
		if err := preflightPolicy(ctx, policy, cfg.Policy.Model); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		o.Policy, o.Loader, o.BaseModel = policy, policy, cfg.Policy.Model
	}
	results, err := harness.RunBench(ctx, o)
	if err != nil {
		return err
	}
	return harness.WriteBenchTable(env.out(), results)
}
