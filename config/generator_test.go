package config

import (
	"strings"
	"testing"
)

func TestGeneratorDefaults(t *testing.T) {
	g := Default().Generator
	if g.Temperature != 1.0 || g.EvalFraction != 0.1 || g.BatchSize != 5 || g.NearDupThreshold != 0.7 ||
		g.MinWords != 15 || g.MaxWords != 120 || g.Mix != nil || !g.StructuredOutput {
		t.Errorf("Default().Generator = %+v", g)
	}
	cfg, err := Parse([]byte("generator:\n  model: my-model\n  mix: {professional: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Generator.Model != "my-model" || len(cfg.Generator.Mix) != 1 || cfg.Generator.Temperature != 1.0 {
		t.Errorf("Parse(generator) = %+v, want the model and a one-category mix over the defaults", cfg.Generator)
	}
}

func TestGeneratorValidation(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"generator:\n  base_url: ftp://x\n", "key generator.base_url"},
		{"generator:\n  model: \"\"\n", "key generator.model"},
		{"generator:\n  api_key_env: sk-123-secret\n", "key generator.api_key_env"},
		{"generator:\n  concurrency: 0\n", "key generator.concurrency"},
		{"generator:\n  timeout: 0s\n", "key generator.timeout"},
		{"generator:\n  temperature: 3\n", "key generator.temperature"},
		{"generator:\n  max_tokens: 0\n", "key generator.max_tokens"},
		{"generator:\n  batch_size: 0\n", "key generator.batch_size"},
		{"generator:\n  min_words: 50\n  max_words: 20\n", "key generator.max_words"},
		{"generator:\n  near_dup_threshold: 0\n", "key generator.near_dup_threshold"},
		{"generator:\n  eval_fraction: 1\n", "key generator.eval_fraction"},
		{"generator:\n  mix: {open_ended: 1}\n", "generator.mix.open_ended"},
		{"generator:\n  mix: {professional: 0}\n", "key generator.mix"},
		{"generator:\n  mix: {professional: -1, interpersonal: 2}\n", "generator.mix.professional"},
	} {
		_, err := Parse([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.body, err, tc.want)
		}
	}
}

func TestGeneratorRedacted(t *testing.T) {
	cfg := Default()
	cfg.Generator.BaseURL = "https://u:hunter2@gen.example.com/v1"
	b, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("YAML() leaks the generator URL's password")
	}
}
