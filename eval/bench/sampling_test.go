package bench

import (
	"encoding/json"
	"testing"
)

func TestSamplingPresets(t *testing.T) {
	tests := []struct {
		name string
		want SamplingPreset
		json string
	}{
		{PresetQwen3Thinking,
			SamplingPreset{Name: PresetQwen3Thinking, Temperature: 0.6, TopP: 0.95, TopK: 20, MinP: 0, MaxTokens: 32768, EnableThinking: true},
			`{"max_tokens":32768,"temperature":0.6,"top_p":0.95,"top_k":20,"n":1}`},
		{PresetQwen3NonThinking,
			SamplingPreset{Name: PresetQwen3NonThinking, Temperature: 0.7, TopP: 0.8, TopK: 20, MinP: 0, MaxTokens: 32768, EnableThinking: false},
			`{"max_tokens":32768,"temperature":0.7,"top_p":0.8,"top_k":20,"n":1}`},
	}
	for _, tt := range tests {
		got, err := LookupSamplingPreset(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("LookupSamplingPreset(%q) = %+v, %v, want %+v", tt.name, got, err, tt.want)
			continue
		}
		b, err := json.Marshal(got.Sampling())
		if err != nil || string(b) != tt.json {
			t.Errorf("%s.Sampling() JSON = %s, want %s", tt.name, b, tt.json)
		}
		if kw := got.ChatTemplateKwargs(); kw["enable_thinking"] != tt.want.EnableThinking {
			t.Errorf("%s.ChatTemplateKwargs() = %v", tt.name, kw)
		}
	}
	if _, err := LookupSamplingPreset("greedy"); err == nil {
		t.Errorf("LookupSamplingPreset(%q) error = nil, want unknown preset", "greedy")
	}
}
