package bench

import (
	"fmt"

	"github.com/parleyhq/parley/llm"
)

// SamplingPreset is a named set of sampling parameters for benchmark
// generation, with the chat-template switch it goes with.
type SamplingPreset struct {
	Name           string
	Temperature    float64
	TopP           float64
	TopK           int
	MinP           float64
	MaxTokens      int
	EnableThinking bool // chat_template_kwargs.enable_thinking
}

// Preset names.
const (
	PresetQwen3Thinking    = "qwen3-thinking"
	PresetQwen3NonThinking = "qwen3-non-thinking"
)

// Qwen3's model card (huggingface.co/Qwen/Qwen3-14B, "Best Practices"):
//
//	For thinking mode (enable_thinking=True), use Temperature=0.6, TopP=0.95,
//	TopK=20, and MinP=0 (the default setting in generation_config.json). DO NOT
//	use greedy decoding, as it can lead to performance degradation and endless
//	repetitions.
//	For non-thinking mode (enable_thinking=False), we suggest using
//	Temperature=0.7, TopP=0.8, TopK=20, and MinP=0.
//	[…] We recommend using an output length of 32,768 tokens for most queries.
//	For benchmarking on highly complex problems, such as those found in math
//	and programming competitions, we suggest setting the max output length to
//	38,912 tokens.
//
// MaxTokens below is the 32,768 of "most queries"; set 38,912 for AIME if
// the server's context allows (prompt + max_tokens ≤ max_model_len).

// Qwen3Thinking returns Qwen3's recommended thinking-mode settings:
// temperature 0.6, top_p 0.95, top_k 20, min_p 0, 32,768 new tokens.
func Qwen3Thinking() SamplingPreset {
	return SamplingPreset{Name: PresetQwen3Thinking, Temperature: 0.6, TopP: 0.95, TopK: 20, MinP: 0, MaxTokens: 32768, EnableThinking: true}
}

// Qwen3NonThinking returns Qwen3's recommended non-thinking-mode settings:
// temperature 0.7, top_p 0.8, top_k 20, min_p 0, 32,768 new tokens.
func Qwen3NonThinking() SamplingPreset {
	return SamplingPreset{Name: PresetQwen3NonThinking, Temperature: 0.7, TopP: 0.8, TopK: 20, MinP: 0, MaxTokens: 32768, EnableThinking: false}
}

// LookupSamplingPreset returns the preset of that name.
func LookupSamplingPreset(name string) (SamplingPreset, error) {
	switch name {
	case PresetQwen3Thinking:
		return Qwen3Thinking(), nil
	case PresetQwen3NonThinking:
		return Qwen3NonThinking(), nil
	}
	return SamplingPreset{}, fmt.Errorf("bench.LookupSamplingPreset: unknown preset %q (want %q or %q)",
		name, PresetQwen3Thinking, PresetQwen3NonThinking)
}

// Sampling returns the preset as the policy client's sampling parameters
// (one sample, unseeded; set N and Seed as needed).
func (p SamplingPreset) Sampling() llm.Sampling {
	return llm.Sampling{
		MaxTokens:   p.MaxTokens,
		Temperature: p.Temperature,
		TopP:        p.TopP,
		TopK:        p.TopK,
		MinP:        p.MinP,
		N:           1,
	}
}

// ChatTemplateKwargs returns the chat-template arguments for /tokenize:
// {"enable_thinking": …}.
func (p SamplingPreset) ChatTemplateKwargs() map[string]any {
	return map[string]any{"enable_thinking": p.EnableThinking}
}
