// Package rollout plays games (environments) against the policy server and
// records each rollout token in, token out: the games (the deliberation game
// of seed 000 and the single-agent baseline), the per-agent trajectory
// recorder with its loss masks, and the worker pool that samples groups.
package rollout

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
)

// Policy is what rollouts need of the inference client: chat-template
// tokenization and token-id completions.
type Policy interface {
	Tokenize(ctx context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error)
	Complete(ctx context.Context, req llm.CompletionRequest) ([]llm.Completion, error)
}

// Agents speaks for the agents of one rollout. A game calls Turn with an
// agent's own view of the conversation; the agent's reply is sampled from
// exactly the tokens the server rendered and recorded in that agent's
// trajectory.
type Agents interface {
	Turn(ctx context.Context, role string, msgs []llm.Message, opts TurnOptions) (Reply, error)
}

// TurnOptions shape one turn.
type TurnOptions struct {
	// Kind is dataset.KindDialogue or dataset.KindFinal: the kind of the
	// training sequence the turn's tokens go to.
	Kind string
	// MaxTokens bounds the reply (0: the recorder's default).
	MaxTokens int
}

// Reply is an agent's sampled turn.
type Reply struct {
	// Text is the visible reply: end-of-turn tokens and <think> blocks removed.
	Text string
	// Raw is the text as the server decoded it.
	Raw          string
	Tokens       int
	FinishReason string
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	Policy Policy
	// Model is the served model or LoRA adapter name to sample from.
	Model string
	// Sampling is the base sampling; each turn gets its own derived seed.
	Sampling llm.Sampling
	// ChatTemplateKwargs go to /tokenize (e.g. enable_thinking).
	ChatTemplateKwargs map[string]any
	// Seed is the rollout's seed.
	Seed int64
}

// Recorder implements Agents for one rollout and holds its trajectories.
type Recorder struct {
	opts  RecorderOptions
	seqs  []dataset.Sequence
	cur   map[string]int // role → index of its current sequence in seqs
	turns map[string]int // role → turns taken

	// PrefixBreaks counts re-rendered prompts that did not extend the
	// agent's sequence, each of which started a new training sequence.
	PrefixBreaks  int
	Requests      int
	PromptTokens  int
	SampledTokens int
}

// NewRecorder returns a Recorder for one rollout.
func NewRecorder(opts RecorderOptions) *Recorder {
	return &Recorder{opts: opts, cur: map[string]int{}, turns: map[string]int{}}
}

// Turn renders msgs with the chat template, extends (or, on a prefix break,
// restarts) the role's training sequence with the rendered tokens under mask
// 0, samples a reply from exactly that sequence, and appends the sampled
// tokens under mask 1 with their logprobs.
func (r *Recorder) Turn(ctx context.Context, role string, msgs []llm.Message, opts TurnOptions) (Reply, error) {
	tok, err := r.opts.Policy.Tokenize(ctx, llm.TokenizeRequest{
		Model:               r.opts.Model,
		Messages:            msgs,
		AddGenerationPrompt: true,
		ChatTemplateKwargs:  r.opts.ChatTemplateKwargs,
	})
	r.Requests++
	if err != nil {
		return Reply{}, fmt.Errorf("rollout: tokenize turn of %s: %w", role, err)
	}
	kind := opts.Kind
	if kind == "" {
		kind = dataset.KindDialogue
	}
	idx, ok := r.cur[role]
	if ok && r.seqs[idx].Kind == kind && hasPrefix(tok.Tokens, r.seqs[idx].InputIDs) {
		s := &r.seqs[idx]
		delta := tok.Tokens[len(s.InputIDs):]
		s.InputIDs = append(s.InputIDs, delta...)
		s.LossMask = append(s.LossMask, make([]int8, len(delta))...)
		s.Logprobs = append(s.Logprobs, make([]float32, len(delta))...)
		r.PromptTokens += len(delta)
	} else {
		if ok {
			r.PrefixBreaks++
		}
		r.seqs = append(r.seqs, dataset.Sequence{
			Role:     role,
			Kind:     kind,
			InputIDs: append([]int32(nil), tok.Tokens...),
			LossMask: make([]int8, len(tok.Tokens)),
			Logprobs: make([]float32, len(tok.Tokens)),
		})
		idx = len(r.seqs) - 1
		r.cur[role] = idx
		r.PromptTokens += len(tok.Tokens)
	}
	s := &r.seqs[idx]

	sp := r.opts.Sampling
	if opts.MaxTokens > 0 {
		sp.MaxTokens = opts.MaxTokens
	}
	if tok.MaxModelLen > 0 {
		room := tok.MaxModelLen - len(s.InputIDs)
		if room <= 0 {
			return Reply{}, fmt.Errorf("rollout: turn of %s: the prompt fills the context (%d tokens, max_model_len %d)", role, len(s.InputIDs), tok.MaxModelLen)
		}
		if sp.MaxTokens > room {
			sp.MaxTokens = room
		}
	}
	turn := r.turns[role]
	r.turns[role] = turn + 1
	seed := DeriveSeed(r.opts.Seed, role, int64(turn))
	sp.Seed = &seed
	sp.N = 1
	prompt := s.InputIDs
	choices, err := r.opts.Policy.Complete(ctx, llm.CompletionRequest{Model: r.opts.Model, Prompt: prompt, Sampling: sp})
	r.Requests++
	if err != nil {
		return Reply{}, fmt.Errorf("rollout: sample turn %d of %s: %w", turn+1, role, err)
	}
	if len(choices) == 0 {
		return Reply{}, fmt.Errorf("rollout: sample turn %d of %s: the server returned no choices", turn+1, role)
	}
	c := choices[0]
	s.InputIDs = append(s.InputIDs, c.TokenIDs...)
	for range c.TokenIDs {
		s.LossMask = append(s.LossMask, 1)
	}
	s.Logprobs = append(s.Logprobs, c.Logprobs...)
	r.SampledTokens += len(c.TokenIDs)
	return Reply{Text: CleanText(c.Text), Raw: c.Text, Tokens: len(c.TokenIDs), FinishReason: c.FinishReason}, nil
}

// Sequences returns the recorded training sequences in creation order.
func (r *Recorder) Sequences() []dataset.Sequence { return r.seqs }

func hasPrefix(s, prefix []int32) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i, v := range prefix {
		if s[i] != v {
			return false
		}
	}
	return true
}

var (
	thinkBlock = regexp.MustCompile(`(?s)<think>.*?</think>`)
	endTokens  = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>"}
)

// CleanText is the visible part of a sampled turn: private <think> blocks
// and end-of-turn tokens removed, whitespace trimmed.
func CleanText(s string) string {
	s = thinkBlock.ReplaceAllString(s, "")
	if i := strings.Index(s, "<think>"); i >= 0 { // unterminated reasoning
		s = s[:i]
	}
	for _, e := range endTokens {
		s = strings.ReplaceAll(s, e, "")
	}
	return strings.TrimSpace(s)
}

// TrimEndTokens removes the end-of-turn tokens a server may leave at the
// end of a sampled text, and nothing else: the rest is the agent's own turn
// as its chat template must render it again.
func TrimEndTokens(s string) string {
	for {
		cut := false
		for _, e := range endTokens {
			if t, ok := strings.CutSuffix(s, e); ok {
				s, cut = t, true
			}
		}
		if !cut {
			return s
		}
	}
}

// DeriveSeed derives a child seed from a parent seed and labels,
// deterministically (FNV-1a over the parts, then a splitmix64 finaliser).
func DeriveSeed(parent int64, label string, n int64) int64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(parent))
	h.Write(b[:])
	h.Write([]byte(label))
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z & 0x7fffffff) // vLLM seeds are non-negative ints
}
