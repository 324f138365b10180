// Package llm is parley's client for the policy inference server: the subset
// of vLLM's OpenAI-compatible API that parley uses (token-id prompts,
// returned token ids and logprobs, chat-template tokenization, LoRA hot
// loading), over several load-balanced endpoints with retries.
package llm

import "encoding/json"

// Message is one chat message as the server's chat template renders it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Reasoning, when set, is an assistant message's reasoning, which
	// templates such as Qwen3's render in a think block (or, set to "", as
	// none). It is sent both as "reasoning" (vLLM 0.11 and later) and as
	// "reasoning_content" (older servers).
	Reasoning *string `json:"-"`
}

// MarshalJSON writes role and content, and the reasoning under both names
// when it is set.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain struct {
		Role             string  `json:"role"`
		Content          string  `json:"content"`
		Reasoning        *string `json:"reasoning,omitempty"`
		ReasoningContent *string `json:"reasoning_content,omitempty"`
	}
	return json.Marshal(plain{m.Role, m.Content, m.Reasoning, m.Reasoning})
}

// TokenizeRequest asks the server to render messages with its chat template
// and tokenize them (POST /tokenize, messages form).
type TokenizeRequest struct {
	Model               string         `json:"model,omitempty"`
	Messages            []Message      `json:"messages"`
	AddGenerationPrompt bool           `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any `json:"chat_template_kwargs,omitempty"`
}

// TokenizeResult is the server's tokenization of a rendered conversation.
type TokenizeResult struct {
	Tokens      []int32 `json:"tokens"`
	Count       int     `json:"count"`
	MaxModelLen int     `json:"max_model_len"`
}

// Sampling holds the sampling parameters of a completion request. MaxTokens
// is always sent (vLLM's default is 16). A nil Seed leaves sampling unseeded.
type Sampling struct {
	MaxTokens   int      `json:"max_tokens"`
	Temperature float64  `json:"temperature"`
	TopP        float64  `json:"top_p,omitempty"`
	TopK        int      `json:"top_k,omitempty"`
	MinP        float64  `json:"min_p,omitempty"`
	N           int      `json:"n,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Stop        []string `json:"stop,omitempty"`
}

// CompletionRequest is a token-in completion request (POST /v1/completions
// with a token-id prompt). Model is the served model or a loaded LoRA
// adapter's name.
type CompletionRequest struct {
	Model  string
	Prompt []int32
	Sampling
}

// Completion is one sampled choice, token out: the sampled token ids, their
// logprobs (one per token) and the decoded text.
type Completion struct {
	TokenIDs     []int32
	Logprobs     []float32
	Text         string
	FinishReason string
}
