package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/retry"
)

// TestVLLMBadInput asks a real vLLM (PARLEY_VLLM_URL, PARLEY_VLLM_MODEL)
// what the table tests fake: a model it does not serve and an adapter path
// it cannot read must each give one clear error, at once.
func TestVLLMBadInput(t *testing.T) {
	base, model := os.Getenv("PARLEY_VLLM_URL"), os.Getenv("PARLEY_VLLM_MODEL")
	if base == "" || model == "" {
		t.Skip("PARLEY_VLLM_URL and PARLEY_VLLM_MODEL unset: no real vLLM to ask (the CI harness sets them)")
	}
	c := newTestClient(t, Options{Endpoints: []string{base}, RequestTimeout: 5 * time.Minute, Retry: retry.Policy{MaxRetries: 3}})
	ctx := context.Background()
	info, err := c.Preflight(ctx, model)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("preflight: %+v", info)
	if _, err := c.Preflight(ctx, model+"-not-served"); !errors.Is(err, ErrModelNotServed) {
		t.Errorf("Preflight of a model it does not serve = %v, want ErrModelNotServed", err)
	}
	// The runtime-LoRA check passes on a server started with parley's
	// flags, leaves no adapter loaded, and the engine serves on.
	if err := c.CheckLoRA(ctx); err != nil {
		t.Errorf("CheckLoRA on a server with runtime LoRA = %v", err)
	}
	if ids, err := c.Models(ctx); err != nil || len(ids) != len(info[0].Models) {
		t.Errorf("after CheckLoRA the server lists %v, %v; want %v", ids, err, info[0].Models)
	}
	if _, err := c.Complete(ctx, CompletionRequest{Model: model, Prompt: []int32{1, 2}, Sampling: Sampling{MaxTokens: 2}}); err != nil {
		t.Errorf("a completion after CheckLoRA: %v", err)
	}
	tests := []struct {
		name string
		op   func() error
		want error
		says string
	}{
		{"another model", func() error {
			_, err := c.Complete(ctx, CompletionRequest{Model: model + "-not-served", Prompt: []int32{1, 2}, Sampling: Sampling{MaxTokens: 2}})
			return err
		}, ErrModelNotServed, "policy.model"},
		{"adapter path missing", func() error {
			return c.LoadLoRA(ctx, "parley-missing", filepath.Join(t.TempDir(), "no-adapter-here"))
		}, ErrAdapterNotFound, "no-adapter-here"},
	}
	for _, tt := range tests {
		before := c.Stats().Attempts
		err := tt.op()
		t.Logf("%s: %v", tt.name, err)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want %v saying %q", tt.name, err, tt.want, tt.says)
		}
		if n := c.Stats().Attempts - before; n != 1 {
			t.Errorf("%s: %d attempts, want 1", tt.name, n)
		}
	}
}
