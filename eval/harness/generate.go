package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// Policy is what benchmark generation needs of the inference client:
// chat-template tokenization and token-id completions.
type Policy interface {
	Tokenize(ctx context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error)
	Complete(ctx context.Context, req llm.CompletionRequest) ([]llm.Completion, error)
}

var _ Policy = (*llm.Client)(nil)

// GenerateOptions configure Generate.
type GenerateOptions struct {
	Policy Policy
	// Model is the served model or LoRA adapter name.
	Model string
	// Preset gives the sampling parameters and enable_thinking
	// (bench.Qwen3Thinking, bench.Qwen3NonThinking).
	Preset bench.SamplingPreset
	// MaxTokens, when positive, replaces the preset's token limit. Either
	// way it is capped to the context left after the prompt.
	MaxTokens int
	// Seed seeds sampling: question q of run k samples with
	// rollout.DeriveSeed(Seed, "bench/"+q.ID, k), whatever the model, so a
	// base model and its adapter see the same seeds.
	Seed int64
	// Concurrency bounds the questions in flight (default 64).
	Concurrency int
	Logger      *zap.Logger
	// OnDone, if set, is called after each question; it may be called
	// concurrently.
	OnDone func()
}

// Generation is the policy's answer to one question. Response.Response is
// the decoded text with end-of-turn tokens removed and thinking kept (the
// scorers strip it); a failed request has an empty response and its Error.
type Generation struct {
	bench.Response
	Tokens       int    `json:"tokens"`
	FinishReason string `json:"finish_reason,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Generate asks every question (a user message rendered with the chat
// template, enable_thinking as the preset says, then one completion) with
// bounded concurrency and returns the generations in question order. A
// question whose request fails after the client's retries keeps an empty
// response and its error (it is scored wrong); Generate fails only when
// ctx is done.
func Generate(ctx context.Context, questions []bench.Question, opts GenerateOptions) ([]Generation, error) {
	if opts.Policy == nil {
		return nil, errors.New("harness.Generate: no policy")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 64
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	out := make([]Generation, len(questions))
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
loop:
	for i, q := range questions {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			g := opts.one(ctx, q)
			out[i] = g
			if g.Error != "" && ctx.Err() == nil {
				log.Warn("benchmark question failed", zap.String("id", q.ID), zap.Int("run", q.Run), zap.String("error", g.Error))
				mu.Lock()
				failed++
				mu.Unlock()
			}
			if opts.OnDone != nil {
				opts.OnDone()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("harness.Generate: %w", err)
	}
	if failed > 0 {
		log.Warn("benchmark questions failed and are scored wrong", zap.Int("failed", failed), zap.Int("questions", len(questions)))
	}
	return out, nil
}

// one asks one question.
func (o *GenerateOptions) one(ctx context.Context, q bench.Question) Generation {
	g := Generation{Response: bench.Response{ID: q.ID, Run: q.Run, Expected: q.Expected}}
	tok, err := o.Policy.Tokenize(ctx, llm.TokenizeRequest{
		Model:               o.Model,
		Messages:            []llm.Message{{Role: "user", Content: q.Prompt}},
		AddGenerationPrompt: true,
		ChatTemplateKwargs:  o.Preset.ChatTemplateKwargs(),
	})
	if err != nil {
		g.Error = fmt.Sprintf("tokenize: %v", err)
		return g
	}
	sp := o.Preset.Sampling()
	if o.MaxTokens > 0 {
		sp.MaxTokens = o.MaxTokens
	}
	if tok.MaxModelLen > 0 {
		room := tok.MaxModelLen - len(tok.Tokens)
		if room <= 0 {
			g.Error = fmt.Sprintf("the prompt fills the context (%d tokens, max_model_len %d)", len(tok.Tokens), tok.MaxModelLen)
			return g
		}
		sp.MaxTokens = min(sp.MaxTokens, room)
	}
	seed := rollout.DeriveSeed(o.Seed, "bench/"+q.ID, int64(q.Run))
	sp.Seed, sp.N = &seed, 1
	choices, err := o.Policy.Complete(ctx, llm.CompletionRequest{Model: o.Model, Prompt: tok.Tokens, Sampling: sp})
	if err != nil {
		g.Error = fmt.Sprintf("complete: %v", err)
		return g
	}
	if len(choices) == 0 {
		g.Error = "complete: the server returned no choices"
		return g
	}
	c := choices[0]
	g.Response.Response = StripEndTokens(c.Text)
	g.Tokens, g.FinishReason = len(c.TokenIDs), c.FinishReason
	return g
}

var endTokens = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>"}

// StripEndTokens removes end-of-turn tokens and surrounding white space
// from a decoded completion, keeping any thinking block.
func StripEndTokens(s string) string {
	for _, e := range endTokens {
		s = strings.ReplaceAll(s, e, "")
	}
	return strings.TrimSpace(s)
}

// Responses returns the bench.Response of each generation.
func Responses(gens []Generation) []bench.Response {
	out := make([]bench.Response, len(gens))
	for i, g := range gens {
		out[i] = g.Response
	}
	return out
}

// WriteGenerations writes generations as JSONL, one {id, run, response,
// expected, tokens, finish_reason, error} object a line (see WriteJSONL).
// bench.ReadResponses reads it back (the extra fields are ignored).
// Question text is never written.
func WriteGenerations(path string, gens []Generation) error {
	if err := WriteJSONL(path, gens); err != nil {
		return fmt.Errorf("harness.WriteGenerations: %w", err)
	}
	return nil
}

// WriteJSONL writes items as JSON lines (HTML characters unescaped),
// creating path's directory if needed, through a fsynced temporary file
// renamed into place.
func WriteJSONL[T any](path string, items []T) error {
	err := fsutil.WriteWith(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for _, it := range items {
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("harness.WriteJSONL: %w", err)
	}
	return nil
}
