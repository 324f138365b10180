package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/dataset/generate"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newCurriculumCmd(a *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "curriculum",
		Short: "Make curricula: dilemmas with persona pairs, open-ended questions",
	}
	cmd.AddCommand(newCurriculumGenerateCmd(a))
	return cmd
}

// generateLong is curriculum generate's help.
const generateLong = `Asks the configured generator (any OpenAI-compatible endpoint, the config's generator section)
for prompts, checks each (category, form, length, duplicates and near-duplicates), and appends the
accepted ones to F until it holds N. Dilemmas are mixed over professional, interpersonal and
micro_ethics (generator.mix, default 30/40/30) and paired with persona pairs from the library
(curriculum.personas), or with --generate-personas with generated pairs checked to be opposed.
--kind open-ended writes the single-agent baseline's open-ended questions (no personas).
A share of each category (--eval-fraction) is marked split "eval", the rest "train".
The same seed and generator give the same file; rerunning with the same F continues it.`

// generateFlags are curriculum generate's flags.
type generateFlags struct {
	path, out, kind, mix string
	n                    int
	seed                 int64
	evalFraction         float64
	nearDup              float64
	generatePersonas     bool
}

func newCurriculumGenerateCmd(a *cli) *cobra.Command {
	var fl generateFlags
	cmd := &cobra.Command{
		Use:   "generate --n N --out F",
		Short: "Write N prompts with the generator LLM to F (.jsonl or .parquet), resuming what F holds",
		Long:  generateLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, fl.path)
			if err != nil {
				return err
			}
			opts, err := fl.options(cmd, cfg, log)
			if err != nil {
				return err
			}
			return runGenerate(cmd, a, cfg, fl, opts, log)
		},
	}
	configFlags(cmd, &fl.path)
	f := cmd.Flags()
	f.IntVar(&fl.n, "n", 0, "number of prompts the output should hold (those already in it count)")
	f.StringVar(&fl.out, "out", "", "output file: .jsonl (appended as it goes) or .parquet")
	f.StringVar(&fl.kind, "kind", generate.KindDilemmas, "dilemmas or open-ended")
	f.Int64Var(&fl.seed, "seed", 0, "seed of the requests, persona pairing and eval split (default: run.seed)")
	f.Float64Var(&fl.evalFraction, "eval-fraction", 0, "share of each category held out as split \"eval\" (default: generator.eval_fraction, 0.1)")
	f.Float64Var(&fl.nearDup, "near-dup-threshold", 0, "word 3-shingle Jaccard similarity that makes a near-duplicate (default: generator.near_dup_threshold, 0.7; 1: exact only)")
	f.StringVar(&fl.mix, "mix", "", "category weights, e.g. professional=0.3,interpersonal=0.4,micro_ethics=0.3 (default: generator.mix)")
	f.BoolVar(&fl.generatePersonas, "generate-personas", false, "generate a persona pair per dilemma, checked to be opposed, instead of using the library")
	return cmd
}

// options are the generator's options: the config's generator section with
// the flags that were set on top.
func (fl generateFlags) options(cmd *cobra.Command, cfg config.Config, log *zap.Logger) (generate.Options, error) {
	if fl.out == "" {
		return generate.Options{}, errors.New("curriculum generate: --out F is required")
	}
	if fl.n < 1 {
		return generate.Options{}, fmt.Errorf("curriculum generate: --n must be at least 1, got %d", fl.n)
	}
	if fl.kind != generate.KindDilemmas && fl.kind != generate.KindOpenEnded {
		return generate.Options{}, fmt.Errorf("curriculum generate: --kind: unknown kind %q (want %s or %s)", fl.kind, generate.KindDilemmas, generate.KindOpenEnded)
	}
	g := cfg.Generator
	opts := generate.Options{
		Kind: fl.kind, N: fl.n, Seed: cfg.Run.Seed, EvalFraction: g.EvalFraction, BatchSize: g.BatchSize,
		Concurrency: g.Concurrency, MinWords: g.MinWords, MaxWords: g.MaxWords, NearDupThreshold: g.NearDupThreshold,
		GeneratePersonas: fl.generatePersonas, Logger: log.Named("generate"),
	}
	if fl.kind == generate.KindDilemmas && len(g.Mix) > 0 {
		opts.Mix = g.Mix
	}
	flags := cmd.Flags()
	if flags.Changed("seed") {
		opts.Seed = fl.seed
	}
	if flags.Changed("eval-fraction") {
		opts.EvalFraction = fl.evalFraction
	}
	if flags.Changed("near-dup-threshold") {
		opts.NearDupThreshold = fl.nearDup
	}
	var err error
	if flags.Changed("mix") {
		if opts.Mix, err = generate.ParseMix(fl.mix); err != nil {
			return opts, fmt.Errorf("curriculum generate: --mix: %w", err)
		}
	}
	if cfg.Curriculum.Personas != "" && fl.kind == generate.KindDilemmas {
		if opts.Personas, err = dataset.LoadPersonaPairs(cfg.Curriculum.Personas); err != nil {
			return opts, fmt.Errorf("config key curriculum.personas: %w", err)
		}
	}
	if err := opts.Validate(); err != nil {
		return opts, fmt.Errorf("curriculum generate: %w", err)
	}
	return opts, nil
}

// runGenerate generates into --out, resuming it, and reports.
func runGenerate(cmd *cobra.Command, a *cli, cfg config.Config, fl generateFlags, opts generate.Options, log *zap.Logger) error {
	client, err := chat.New(generatorClient(cfg, log))
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.Check(cmd.Context()); err != nil {
		if ctxErr := cmd.Context().Err(); ctxErr != nil {
			return fmt.Errorf("curriculum generate: interrupted before the first prompt (rerun to continue): %w", ctxErr)
		}
		return fmt.Errorf("curriculum generate: %w", err)
	}
	sink, existing, err := generate.OpenFile(fl.out)
	if err != nil {
		return err
	}
	opts.Existing = existing
	tick, end := a.progress("prompts", fl.n)
	for range min(len(existing), fl.n) {
		tick()
	}
	st, genErr := generate.Generate(cmd.Context(), client, opts, tickSink{Sink: sink, tick: tick})
	end(genErr != nil)
	if err := sink.Close(); err != nil {
		return errors.Join(genErr, err)
	}
	total := st.Existing + st.Accepted
	log.Info("curriculum generate summary",
		zap.String("out", fl.out), zap.String("kind", fl.kind), zap.Int("prompts", total),
		zap.Int("existing", st.Existing), zap.Int("accepted", st.Accepted), zap.Int("eval", st.Eval),
		zap.Any("by_category", st.ByCategory), zap.Int("requests", st.Requests),
		zap.Int("requested", st.Requested), zap.Int("returned", st.Returned),
		zap.Any("rejected", st.Rejected), zap.Int("persona_requests", st.PersonaRequests),
		zap.Int("failed_requests", st.FailedRequests),
		zap.Int("prompt_tokens", st.PromptTokens), zap.Int("completion_tokens", st.CompletionTokens))
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %d prompts (%d new, %d eval; %s); rejected: %s\n",
		fl.out, total, st.Accepted, st.Eval, formatCounts(st.ByCategory), formatCounts(st.Rejected))
	if genErr != nil {
		if errors.Is(genErr, context.Canceled) {
			return fmt.Errorf("curriculum generate: interrupted with %d of %d prompts in %s (rerun to continue): %w", total, fl.n, fl.out, genErr)
		}
		return fmt.Errorf("curriculum generate: %d of %d prompts in %s: %w", total, fl.n, fl.out, genErr)
	}
	return nil
}

// tickSink advances the progress bar with each prompt written.
type tickSink struct {
	generate.Sink
	tick func()
}

func (s tickSink) Write(p dataset.Prompt) error {
	if err := s.Sink.Write(p); err != nil {
		return err
	}
	s.tick()
	return nil
}

// generatorClient is the generator API configuration; the key is read from
// the environment variable the config names.
func generatorClient(cfg config.Config, log *zap.Logger) chat.Options {
	g := cfg.Generator
	key := ""
	if g.APIKeyEnv != "" {
		key = os.Getenv(g.APIKeyEnv)
		if key == "" {
			log.Warn("the generator's API key variable is not set; sending no key", zap.String("variable", g.APIKeyEnv))
		}
	}
	return chat.Options{
		Name:                    "generator",
		BaseURL:                 g.BaseURL,
		Model:                   g.Model,
		APIKey:                  key,
		Concurrency:             g.Concurrency,
		RequestsPerMinute:       g.RequestsPerMinute,
		TokensPerMinute:         g.TokensPerMinute,
		Retry:                   retryPolicy(g.MaxRetries),
		Timeout:                 g.Timeout,
		Temperature:             g.Temperature,
		MaxTokens:               g.MaxTokens,
		DisableStructuredOutput: !g.StructuredOutput,
		Logger:                  log.Named("generator"),
	}
}

// formatCounts renders counts as "a 1, b 2" in key order, or "none".
func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "none"
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
