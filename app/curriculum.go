package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/dataset/generate"
	"github.com/parleyhq/parley/llm/chat"
	"go.uber.org/zap"
)

// options are the generator's options: the config's generator section with
// the flags that were set on top.
func (fl CurriculumOptions) options(cfg config.Config, log *zap.Logger) (generate.Options, error) {
	if fl.Out == "" {
		return generate.Options{}, errors.New("curriculum generate: --out F is required")
	}
	if fl.N < 1 {
		return generate.Options{}, fmt.Errorf("curriculum generate: --n must be at least 1, got %d", fl.N)
	}
	if fl.Kind != generate.KindDilemmas && fl.Kind != generate.KindOpenEnded {
		return generate.Options{}, fmt.Errorf("curriculum generate: --kind: unknown kind %q (want %s or %s)", fl.Kind, generate.KindDilemmas, generate.KindOpenEnded)
	}
	g := cfg.Generator
	opts := generate.Options{
		Kind: fl.Kind, N: fl.N, Seed: cfg.Run.Seed, EvalFraction: g.EvalFraction, BatchSize: g.BatchSize,
		Concurrency: g.Concurrency, MinWords: g.MinWords, MaxWords: g.MaxWords, NearDupThreshold: g.NearDupThreshold,
		GeneratePersonas: fl.GeneratePersonas, Logger: log.Named("generate"),
	}
	if fl.Kind == generate.KindDilemmas && len(g.Mix) > 0 {
		opts.Mix = g.Mix
	}
	if fl.Seed != nil {
		opts.Seed = *fl.Seed
	}
	if fl.EvalFraction != nil {
		opts.EvalFraction = *fl.EvalFraction
	}
	if fl.NearDup != nil {
		opts.NearDupThreshold = *fl.NearDup
	}
	var err error
	if fl.Mix != nil {
		if opts.Mix, err = generate.ParseMix(*fl.Mix); err != nil {
			return opts, fmt.Errorf("curriculum generate: --mix: %w", err)
		}
	}
	if cfg.Curriculum.Personas != "" && fl.Kind == generate.KindDilemmas {
		if opts.Personas, err = dataset.LoadPersonaPairs(cfg.Curriculum.Personas); err != nil {
			return opts, fmt.Errorf("config key curriculum.personas: %w", err)
		}
	}
	if err := opts.Validate(); err != nil {
		return opts, fmt.Errorf("curriculum generate: %w", err)
	}
	return opts, nil
}

// GenerateCurriculum asks the config's generator for prompts into
// fl.Out until it holds fl.N, resuming what it holds, and reports.
func GenerateCurriculum(ctx context.Context, cfg config.Config, env Env, fl CurriculumOptions) error {
	log := env.log()
	opts, err := fl.options(cfg, log)
	if err != nil {
		return err
	}
	client, err := chat.New(generatorClient(cfg, log))
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.Check(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("curriculum generate: interrupted before the first prompt (rerun to continue): %w", ctxErr)
		}
		return fmt.Errorf("curriculum generate: %w", err)
	}
	sink, existing, err := generate.OpenFile(fl.Out)
	if err != nil {
		return err
	}
	opts.Existing = existing
	tick, end := env.progress("prompts", fl.N)
	for range min(len(existing), fl.N) {
		tick()
	}
	st, genErr := generate.Generate(ctx, client, opts, tickSink{Sink: sink, tick: tick})
	end(genErr != nil)
	if err := sink.Close(); err != nil {
		return errors.Join(genErr, err)
	}
	total := st.Existing + st.Accepted
	log.Info("curriculum generate summary",
		zap.String("out", fl.Out), zap.String("kind", fl.Kind), zap.Int("prompts", total),
		zap.Int("existing", st.Existing), zap.Int("accepted", st.Accepted), zap.Int("eval", st.Eval),
		zap.Any("by_category", st.ByCategory), zap.Int("requests", st.Requests),
		zap.Int("requested", st.Requested), zap.Int("returned", st.Returned),
		zap.Any("rejected", st.Rejected), zap.Int("persona_requests", st.PersonaRequests),
		zap.Int("failed_requests", st.FailedRequests),
		zap.Int("prompt_tokens", st.PromptTokens), zap.Int("completion_tokens", st.CompletionTokens))
	fmt.Fprintf(env.out(), "%s: %d prompts (%d new, %d eval; %s); rejected: %s\n",
		fl.Out, total, st.Accepted, st.Eval, formatCounts(st.ByCategory), formatCounts(st.Rejected))
	if genErr != nil {
		if errors.Is(genErr, context.Canceled) {
			return fmt.Errorf("curriculum generate: interrupted with %d of %d prompts in %s (rerun to continue): %w", total, fl.N, fl.Out, genErr)
		}
		return fmt.Errorf("curriculum generate: %d of %d prompts in %s: %w", total, fl.N, fl.Out, genErr)
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
	o := chatOptions("generator", g.ChatEndpoint, apiKey("generator", g.APIKeyEnv, log), log)
	o.Temperature, o.MaxTokens = g.Temperature, g.MaxTokens
	return o
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

// CurriculumOptions are `parley curriculum generate`'s settings beside the
// config's generator section; a nil pointer leaves the config's value.
type CurriculumOptions struct {
	// Out is the file (.jsonl or .parquet), N the prompts it should hold,
	// Kind dilemmas or open-ended.
	Out, Kind string
	N         int
	// Seed, EvalFraction, NearDup (the near-duplicate threshold) and Mix
	// (category weights, a=w,...) override the config when set.
	Seed         *int64
	EvalFraction *float64
	NearDup      *float64
	Mix          *string
	// GeneratePersonas generates a persona pair per dilemma.
	GeneratePersonas bool
}
