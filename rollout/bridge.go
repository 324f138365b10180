package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/parleyhq/parley/llm"
)

// ErrBridge means the server's chat template cannot render the bridge that
// joins an agent's sampled turn to its next generation prompt, so
// rollout.history: tokens cannot be used with it.
var ErrBridge = errors.New("the chat template cannot render the bridge between turns")

// fixBridge is what to do about ErrBridge.
const fixBridge = "serve the model with a chat template that renders a lone assistant message followed by " +
	"other messages and a generation prompt (Qwen3's, ChatML), or set rollout.history: rerender"

// Bridge renders, with the server's chat template, the tokens that join an
// agent's last sampled turn to its next generation prompt: the new messages
// and the generation prompt, rendered after a fixed dummy conversation and
// cut where the dummy ends (the trick of verl's agent loop, SkyRL's
// generator and verifiers' token client). The dummy is one assistant
// message with empty reasoning: it renders the same whether or not messages
// follow it, and no template treats it as the turn in progress.
//
// Once per model and chat-template kwargs a Bridge learns how the template
// ends an assistant message: the end-of-turn token the model samples to
// stop (Qwen's <|im_end|>) and the separator the template writes after it
// (Qwen's "\n"), which a sampled turn lacks. It is safe for concurrent use,
// and one Bridge serves every recorder of a run.
type Bridge struct {
	policy Policy
	mu     sync.Mutex
	facts  map[string]*templateFacts
}

// NewBridge returns a Bridge that renders through policy.
func NewBridge(policy Policy) *Bridge {
	return &Bridge{policy: policy, facts: map[string]*templateFacts{}}
}

// templateFacts is what a Bridge learned of one template.
type templateFacts struct {
	mu    sync.Mutex
	ready bool
	// base is the dummy conversation rendered alone: every bridge
	// rendering starts with it.
	base []int32
	// eot is the token that ends an assistant message (the model's stop
	// token); gap the tokens the template writes after it (Qwen's "\n").
	eot int32
	gap []int32
}

// bridgeDummy is the fixed conversation bridges are rendered after.
func bridgeDummy(content string) llm.Message {
	empty := ""
	return llm.Message{Role: "assistant", Content: content, Reasoning: &empty}
}

// TemplateEnd returns the template's end of an assistant message for model
// and kwargs: the end-of-turn token and the separator after it. The first
// call for a template asks the server (four /tokenize requests); an error
// wraps ErrBridge when the template cannot render bridges.
func (b *Bridge) TemplateEnd(ctx context.Context, model string, kwargs map[string]any) (eot int32, gap []int32, err error) {
	f, err := b.learn(ctx, model, kwargs)
	if err != nil {
		return 0, nil, err
	}
	return f.eot, f.gap, nil
}

// Render returns the bridge for msgs, the messages an agent's view gained
// since its last turn (any role; possibly none): the separator after the
// end-of-turn token, msgs as the template renders them, and the generation
// prompt. It also returns the server's max_model_len.
func (b *Bridge) Render(ctx context.Context, model string, kwargs map[string]any, msgs []llm.Message) ([]int32, int, error) {
	f, err := b.learn(ctx, model, kwargs)
	if err != nil {
		return nil, 0, err
	}
	full, err := b.policy.Tokenize(ctx, llm.TokenizeRequest{Model: model, AddGenerationPrompt: true, ChatTemplateKwargs: kwargs,
		Messages: append([]llm.Message{bridgeDummy("x")}, msgs...)})
	if err != nil {
		return nil, 0, fmt.Errorf("render the bridge: %w", err)
	}
	if !hasPrefix(full.Tokens, f.base) {
		return nil, 0, fmt.Errorf("%w: with these messages after it, the dummy assistant message renders differently than alone (%d of its %d tokens agree); %s",
			ErrBridge, commonPrefix(full.Tokens, f.base), len(f.base), fixBridge)
	}
	return full.Tokens[len(f.base)-len(f.gap):], full.MaxModelLen, nil
}

// learn returns the facts of a template, asking the server the first time.
// A failure is not remembered: the next call asks again.
func (b *Bridge) learn(ctx context.Context, model string, kwargs map[string]any) (*templateFacts, error) {
	kw, err := json.Marshal(kwargs) // sorted keys: a stable key
	if err != nil {
		return nil, fmt.Errorf("chat template kwargs: %w", err)
	}
	key := model + "\x00" + string(kw)
	b.mu.Lock()
	f := b.facts[key]
	if f == nil {
		f = &templateFacts{}
		b.facts[key] = f
	}
	b.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ready {
		return f, nil
	}
	if err := f.probe(ctx, b.policy, model, kwargs); err != nil {
		return nil, err
	}
	f.ready = true
	return f, nil
}

// probe learns how the template ends an assistant message and checks that
// it can render bridges: a dummy message that renders the same when other
// messages follow, and a generation prompt.
func (f *templateFacts) probe(ctx context.Context, p Policy, model string, kwargs map[string]any) error {
	render := func(gen bool, msgs ...llm.Message) ([]int32, error) {
		res, err := p.Tokenize(ctx, llm.TokenizeRequest{Model: model, Messages: msgs, AddGenerationPrompt: gen, ChatTemplateKwargs: kwargs})
		var apiErr *llm.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest:
			// vLLM answers 400 when the template raises on the messages.
			return nil, fmt.Errorf("%w: it refuses the dummy conversation (%w); %s", ErrBridge, err, fixBridge)
		case err != nil:
			return nil, fmt.Errorf("learn the chat template's end of turn: %w", err)
		}
		return res.Tokens, nil
	}
	x, err := render(false, bridgeDummy("x"))
	if err != nil {
		return err
	}
	y, err := render(false, bridgeDummy("y"))
	if err != nil {
		return err
	}
	// Two assistant messages that differ only in their content end alike:
	// what they share at the end is the template's end of a message.
	k := 0
	for k < len(x) && k < len(y) && x[len(x)-1-k] == y[len(y)-1-k] {
		k++
	}
	if k == 0 || k == len(x) {
		return fmt.Errorf("%w: cannot find where it ends an assistant message (rendered %v and %v); %s", ErrBridge, x, y, fixBridge)
	}
	user := llm.Message{Role: "user", Content: "u"}
	withGen, err := render(true, bridgeDummy("x"), user)
	if err != nil {
		return err
	}
	noGen, err := render(false, bridgeDummy("x"), user)
	if err != nil {
		return err
	}
	if !hasPrefix(withGen, x) {
		return fmt.Errorf("%w: an assistant message renders differently when a user message follows it; %s", ErrBridge, fixBridge)
	}
	if len(withGen) <= len(noGen) || !hasPrefix(withGen, noGen) {
		return fmt.Errorf("%w: it renders no generation prompt (add_generation_prompt changes nothing at the end); %s", ErrBridge, fixBridge)
	}
	f.base = x
	f.eot = x[len(x)-k]
	f.gap = x[len(x)-k+1:]
	return nil
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
