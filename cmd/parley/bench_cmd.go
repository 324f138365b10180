package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// Benchmark generation modes (Qwen3's chat-template switch).
const (
	modeThinking    = "thinking"
	modeNonThinking = "non-thinking"
)

// newBenchCmd is `parley bench`: benchmark checks on the policy.
func newBenchCmd(a *app) *cobra.Command {
	var (
		path, data, adapter, mode, out string
		responses                      []string
		runs, maxTokens, concurrency   int
		seed                           int64
	)
	cmd := &cobra.Command{
		Use:       "bench ifeval|gpqa|aime24|aime25 --config F --data FILE",
		Short:     "Benchmark the policy (base, and an adapter side by side): generate, keep the responses, score (seed 000 table 4)",
		ValidArgs: []string{"ifeval", "gpqa", "aime24", "aime25"},
		Args:      cobra.ExactArgs(1),
		Long: `Generates an answer to every item of the benchmark's local data file
(IFEval input_data.jsonl; GPQA Diamond CSV/parquet; AIME JSON(L)/parquet)
from the config's policy endpoints, once per run: the item as one user
message rendered with chat_template_kwargs enable_thinking for --mode, then
/v1/completions with Qwen3's recommended sampling for the mode and a seed
per item and run. Responses go to OUT/<benchmark>-<model>.responses.jsonl,
the per-item scoring to OUT/<benchmark>-<model>.scores.json, and the results
(report.BenchResult, mean ± SD of accuracy over runs) to OUT/<benchmark>.json.
With --adapter NAME[=PATH] the base model and the adapter are run and
reported side by side.

--responses [MODEL=]FILE (repeatable) scores responses already generated
instead (offline; no server is needed). GPQA's choice order depends on
--seed: score with the seed the responses were generated with.

IFEval's headline number is the prompt-level strict accuracy (ifeval); the
instruction-level and loose accuracies are written beside it. GPQA data is
the user's own file and is never written out: only item ids and answer
letters are.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			name, err := harness.BenchmarkName(args[0])
			if err != nil {
				return err
			}
			if data == "" {
				return fmt.Errorf("bench: --data FILE is required (the benchmark's local data file)")
			}
			if !cmd.Flags().Changed("seed") {
				seed = cfg.Run.Seed
			}
			suite, err := harness.LoadSuite(name, data, seed)
			if err != nil {
				return err
			}
			var results []report.BenchResult
			score := func(label string, rs []bench.Response) error {
				sc, err := suite.Score(label, rs)
				if err != nil {
					return err
				}
				if err := writeJSON(filepath.Join(out, benchFile(name, label, "scores.json")), sc.Detail); err != nil {
					return err
				}
				results = append(results, sc.Results...)
				return nil
			}

			if len(responses) > 0 {
				for _, spec := range responses {
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
			} else {
				if runs < 1 {
					return fmt.Errorf("bench: --runs %d must be at least 1", runs)
				}
				if mode == "" {
					mode = modeNonThinking
					if cfg.Policy.EnableThinking {
						mode = modeThinking
					}
				}
				var preset bench.SamplingPreset
				switch mode {
				case modeThinking:
					preset = bench.Qwen3Thinking()
				case modeNonThinking:
					preset = bench.Qwen3NonThinking()
				default:
					return fmt.Errorf("bench: --mode %q: want %s or %s", mode, modeThinking, modeNonThinking)
				}
				policy, err := newPolicy(cfg, log)
				if err != nil {
					return err
				}
				defer policy.Close()
				type model struct{ label, name string }
				models := []model{{"base", cfg.Policy.Model}}
				if adapter != "" {
					an, ap, hasPath := strings.Cut(adapter, "=")
					if an == "" || an == "base" {
						return fmt.Errorf("bench: --adapter %q: want NAME or NAME=PATH", adapter)
					}
					if hasPath {
						if err := policy.LoadLoRA(cmd.Context(), an, ap); err != nil {
							return err
						}
					}
					models = append(models, model{an, an})
				}
				if concurrency <= 0 {
					concurrency = cfg.Rollout.Concurrency
				}
				var questions []bench.Question
				for run := 0; run < runs; run++ {
					questions = append(questions, suite.Questions(run)...)
				}
				log.Info("benchmark", zap.String("benchmark", name), zap.Int("items", suite.Len()), zap.Int("runs", runs),
					zap.String("preset", preset.Name), zap.Int("models", len(models)))
				for _, m := range models {
					bars := a.bars()
					bar := bars.Add(name+" "+m.label, int64(len(questions)))
					gens, err := harness.Generate(cmd.Context(), questions, harness.GenerateOptions{
						Policy: policy, Model: m.name, Preset: preset, MaxTokens: maxTokens, Seed: seed,
						Concurrency: concurrency, Logger: log.With(zap.String("model", m.label)), OnDone: bar.Increment,
					})
					if err != nil {
						bar.Abort()
					}
					bars.Wait()
					if err != nil {
						return err
					}
					file := filepath.Join(out, benchFile(name, m.label, "responses.jsonl"))
					if err := harness.WriteGenerations(file, gens); err != nil {
						return err
					}
					log.Info("responses written", zap.String("path", file))
					if err := score(m.label, harness.Responses(gens)); err != nil {
						return err
					}
				}
			}
			file := filepath.Join(out, name+".json")
			if err := writeJSON(file, results); err != nil {
				return err
			}
			if err := harness.WriteBenchTable(cmd.OutOrStdout(), results); err != nil {
				return err
			}
			log.Info("results written", zap.String("path", file))
			return nil
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "the benchmark's local data file (required)")
	f.IntVar(&runs, "runs", 2, "generation runs (seed 000 table 4 reports two)")
	f.StringVar(&adapter, "adapter", "", "also run this LoRA adapter beside the base model: NAME (loaded) or NAME=PATH (load it first)")
	f.StringVar(&mode, "mode", "", "thinking or non-thinking: chat template switch and Qwen3 sampling preset (default: policy.enable_thinking)")
	f.IntVar(&maxTokens, "max-tokens", 0, "new tokens per answer (default: the preset's 32768; always capped to the context left)")
	f.IntVar(&concurrency, "concurrency", 0, "questions in flight (default: rollout.concurrency)")
	f.Int64Var(&seed, "seed", 0, "seed of sampling and of GPQA's choice shuffle (default: run.seed)")
	f.StringArrayVar(&responses, "responses", nil, "score this responses file instead of generating: [MODEL=]FILE, repeatable (MODEL defaults to base)")
	f.StringVar(&out, "out", "bench-results", "output directory")
	return cmd
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
