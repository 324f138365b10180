// Package rollout plays games (environments) against the policy server and
// records each rollout token in, token out: the Game interface and the
// registry of games (each game lives in a subpackage: deliberation,
// single, …; package games registers the built-in ones), the per-agent
// trajectory recorder with its loss masks and per-role players, the worker
// pool that samples groups, and series of games whose state carries over.
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
	"github.com/parleyhq/parley/llm/chat"
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

// Chatter is what an external player needs: an OpenAI-compatible chat
// client (*chat.Client).
type Chatter interface {
	Chat(ctx context.Context, req chat.Request) (chat.Response, error)
	Model() string
}

// Player is what plays one role of a game: the trained policy, a frozen
// base or adapter on the policy's endpoints, another vLLM endpoint (token
// level), or an external OpenAI-compatible model (text level: no token
// sequence is recorded for it).
type Player struct {
	// Kind is dataset.PolicyTrained, PolicyBase, PolicyAdapter,
	// PolicyEndpoint or PolicyExternal.
	Kind string
	// Model is the served model or adapter name asked. For the trained
	// policy it is set by the runner (the newest adapter).
	Model string
	// Endpoint labels the server when it is not the policy's.
	Endpoint string
	// Tokens is the token-level client; nil for an external player.
	Tokens Policy
	// Chat is the client of an external player.
	Chat Chatter
	// Trained marks the role's sequences for training batches.
	Trained bool
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	Policy Policy
	// Model is the served model or LoRA adapter name of the trained
	// policy, which plays every role not in Players.
	Model string
	// Players maps roles to what plays them when not the trained policy.
	Players map[string]Player
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
	pl := r.Player(role)
	if pl.Chat != nil {
		return r.chatTurn(ctx, role, pl, msgs, opts)
	}
	tok, err := pl.Tokens.Tokenize(ctx, llm.TokenizeRequest{
		Model:               pl.Model,
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
	choices, err := pl.Tokens.Complete(ctx, llm.CompletionRequest{Model: pl.Model, Prompt: prompt, Sampling: sp})
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

// Player returns what plays role: its entry in Players, or the trained
// policy.
func (r *Recorder) Player(role string) Player {
	if pl, ok := r.opts.Players[role]; ok {
		if pl.Tokens == nil && pl.Chat == nil {
			pl.Tokens = r.opts.Policy
		}
		return pl
	}
	return Player{Kind: dataset.PolicyTrained, Model: r.opts.Model, Tokens: r.opts.Policy, Trained: true}
}

// chatTurn asks an external player for its turn through the chat API: no
// token sequence is recorded (the role cannot be trained).
func (r *Recorder) chatTurn(ctx context.Context, role string, pl Player, msgs []llm.Message, opts TurnOptions) (Reply, error) {
	turn := r.turns[role]
	r.turns[role] = turn + 1
	seed := DeriveSeed(r.opts.Seed, role, int64(turn))
	req := chat.Request{Seed: &seed, MaxTokens: opts.MaxTokens}
	if opts.MaxTokens <= 0 {
		req.MaxTokens = r.opts.Sampling.MaxTokens
	}
	temp := r.opts.Sampling.Temperature
	req.Temperature = &temp
	for _, m := range msgs {
		req.Messages = append(req.Messages, chat.Message{Role: m.Role, Content: m.Content})
	}
	resp, err := pl.Chat.Chat(ctx, req)
	r.Requests++
	if err != nil {
		return Reply{}, fmt.Errorf("rollout: turn %d of %s (external model %s): %w", turn+1, role, pl.Chat.Model(), err)
	}
	return Reply{Text: CleanText(resp.Content), Raw: resp.Content, Tokens: resp.CompletionTokens, FinishReason: resp.FinishReason}, nil
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
