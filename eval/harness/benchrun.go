package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/report"
	"go.uber.org/zap"
)

// Benchmark generation modes (Qwen3's chat-template switch).
const (
	ModeThinking    = "thinking"
	ModeNonThinking = "non-thinking"
)

// AdapterLoader loads a LoRA adapter into the inference server.
type AdapterLoader interface {
	LoadLoRA(ctx context.Context, name, path string) error
}

// BenchOptions configure RunBench: a benchmark check of the policy (and an
// adapter beside it), or the scoring of responses already generated.
type BenchOptions struct {
	// Benchmark is ifeval, gpqa, aime24 or aime25 (BenchmarkName); Data its
	// local data file; Seed seeds sampling and GPQA's choice shuffle.
	Benchmark, Data string
	Seed            int64
	// Scorer reads the answers of GPQA and AIME (bench.Scorers; empty is
	// bench.ScorerParley); MathVerify runs bench.ScorerMathVerify.
	Scorer     string
	MathVerify bench.MathVerifier
	// Out is the output directory.
	Out string
	// Responses, when set, scores these responses files instead of
	// generating: each [MODEL=]FILE (MODEL defaults to base).
	Responses []string
	// Runs, Mode (ModeThinking or ModeNonThinking), MaxTokens and
	// Concurrency shape generation.
	Runs        int
	Mode        string
	MaxTokens   int
	Concurrency int
	// Policy, BaseModel and Adapter (NAME, or NAME=PATH to load it first)
	// say what is generated from; Loader loads the adapter.
	Policy    Policy
	Loader    AdapterLoader
	BaseModel string
	Adapter   string
	// Progress, if set, is told of each model's generation: it returns
	// the per-question tick and the end call (failed or not).
	Progress func(label string, total int) (tick func(), end func(failed bool))
	Logger   *zap.Logger
}

// RunBench runs a benchmark check as `parley bench` does: it generates an
// answer to every item once per run (or reads the given responses),
// writes OUT/<benchmark>-<model>.responses.jsonl and .scores.json, and
// OUT/<benchmark>.json with the results (report.BenchResult), which it
// returns. Under a reference scorer the scores and results files are
// named for it (ResultsFile, ScoresFile), beside parley's own.
func RunBench(ctx context.Context, o BenchOptions) ([]report.BenchResult, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	name, err := BenchmarkName(o.Benchmark)
	if err != nil {
		return nil, err
	}
	scorer, err := BenchScorer(name, o.Scorer)
	if err != nil {
		return nil, err
	}
	if o.Data == "" {
		return nil, errors.New("bench: --data FILE is required (the benchmark's local data file)")
	}
	suite, err := LoadSuite(name, o.Data, o.Seed)
	if err != nil {
		return nil, err
	}
	suite.Scoring = bench.ScoreOptions{Scorer: scorer, MathVerify: o.MathVerify}
	if scorer == bench.ScorerMathVerify {
		// Before any generation: the environment must have math-verify.
		if o.MathVerify == nil {
			return nil, errors.New("bench: --scorer math-verify: no math-verify runner")
		}
		if _, err := o.MathVerify.Verify(ctx, nil); err != nil {
			return nil, fmt.Errorf("bench: --scorer math-verify: %w", err)
		}
	}
	var results []report.BenchResult
	score := func(label string, rs []bench.Response) error {
		sc, err := suite.Score(ctx, label, rs)
		if err != nil {
			return err
		}
		if err := writeResult(filepath.Join(o.Out, ScoresFile(name, label, scorer)), sc.Detail); err != nil {
			return err
		}
		results = append(results, sc.Results...)
		return nil
	}
	if len(o.Responses) > 0 {
		err = scoreResponses(suite, o.Responses, score)
	} else {
		err = generateAndScore(ctx, suite, name, o, log, score)
	}
	if err != nil {
		return nil, err
	}
	file := filepath.Join(o.Out, ResultsFile(name, scorer))
	if err := writeResult(file, results); err != nil {
		return nil, err
	}
	log.Info("results written", zap.String("path", file))
	return results, nil
}

// scoreResponses scores each [MODEL=]FILE.
func scoreResponses(suite *Suite, specs []string, score func(string, []bench.Response) error) error {
	for _, spec := range specs {
		label, file, ok := strings.Cut(spec, "=")
		if !ok {
			label, file = "base", spec
		}
		rs, err := suite.ReadResponses(file)
		if err != nil {
			return err
		}
		if err := score(label, rs); err != nil {
			return err
		}
	}
	return nil
}

// generateAndScore generates every question of every run from the base
// model and the adapter, writes the responses and scores them.
func generateAndScore(ctx context.Context, suite *Suite, name string, o BenchOptions, log *zap.Logger, score func(string, []bench.Response) error) error {
	if o.Runs < 1 {
		return fmt.Errorf("bench: --runs %d must be at least 1", o.Runs)
	}
	var preset bench.SamplingPreset
	switch o.Mode {
	case ModeThinking:
		preset = bench.Qwen3Thinking()
	case ModeNonThinking:
		preset = bench.Qwen3NonThinking()
	default:
		return fmt.Errorf("bench: --mode %q: want %s or %s", o.Mode, ModeThinking, ModeNonThinking)
	}
	type model struct{ label, name string }
	models := []model{{"base", o.BaseModel}}
	if o.Adapter != "" {
		an, ap, hasPath := strings.Cut(o.Adapter, "=")
		if an == "" || an == "base" {
			return fmt.Errorf("bench: --adapter %q: want NAME or NAME=PATH", o.Adapter)
		}
		if hasPath {
			if err := o.Loader.LoadLoRA(ctx, an, ap); err != nil {
				return err
			}
		}
		models = append(models, model{an, an})
	}
	var questions []bench.Question
	for run := 0; run < o.Runs; run++ {
		questions = append(questions, suite.Questions(run)...)
	}
	log.Info("benchmark", zap.String("benchmark", name), zap.Int("items", suite.Len()), zap.Int("runs", o.Runs),
		zap.String("preset", preset.Name), zap.Int("models", len(models)))
	for _, m := range models {
		tick, end := func() {}, func(bool) {}
		if o.Progress != nil {
			tick, end = o.Progress(name+" "+m.label, len(questions))
		}
		gens, err := Generate(ctx, questions, GenerateOptions{
			Policy: o.Policy, Model: m.name, Preset: preset, MaxTokens: o.MaxTokens, Seed: o.Seed,
			Concurrency: o.Concurrency, Logger: log.With(zap.String("model", m.label)), OnDone: tick,
		})
		end(err != nil)
		if err != nil {
			return err
		}
		file := filepath.Join(o.Out, benchFile(name, m.label, "responses.jsonl"))
		if err := WriteGenerations(file, gens); err != nil {
			return err
		}
		log.Info("responses written", zap.String("path", file))
		if err := score(m.label, Responses(gens)); err != nil {
			return err
		}
	}
	return nil
}

// BenchScorer returns the scorer a benchmark (as BenchmarkName returns it)
// is scored with: bench.ScorerParley when scorer is empty. IFEval has one
// scorer, the reference's checks: it takes no other.
func BenchScorer(benchmark, scorer string) (string, error) {
	if benchmark == IFEval {
		if scorer != "" && scorer != bench.ScorerParley {
			return "", fmt.Errorf("bench: --scorer %s: %s has one scorer (the reference's checks, ported); --scorer applies to gpqa and aime", scorer, IFEval)
		}
		return "", nil
	}
	s, err := bench.CheckScorer(benchmark, scorer)
	if err != nil {
		return "", fmt.Errorf("bench: --scorer: %w", err)
	}
	return s, nil
}

// ResultsFile is the results file's name in OUT: <benchmark>.json under
// parley's scorer (and IFEval's), <benchmark>.<scorer>.json under a
// reference scorer.
func ResultsFile(benchmark, scorer string) string {
	if scorer == "" || scorer == bench.ScorerParley {
		return benchmark + ".json"
	}
	return benchmark + "." + scorer + ".json"
}

// ScoresFile is the per-item scoring's file name in OUT:
// <benchmark>-<model>.scores.json, or .<scorer>.scores.json under a
// reference scorer.
func ScoresFile(benchmark, model, scorer string) string {
	if scorer == "" || scorer == bench.ScorerParley {
		return benchFile(benchmark, model, "scores.json")
	}
	return benchFile(benchmark, model, scorer+".scores.json")
}

// writeResult writes v as JSON to path, creating its directory.
func writeResult(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return report.WriteJSON(path, v)
}

// benchFile names an output file of a benchmark and model, keeping the
// model's name to safe characters.
func benchFile(benchmark, model, suffix string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, model)
	return benchmark + "-" + safe + "." + suffix
}
