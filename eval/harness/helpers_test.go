package harness

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/sim"
)

// newSim starts an in-process serve-sim and a policy client for it.
func newSim(t *testing.T) (*httptest.Server, *llm.Client) {
	t.Helper()
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	c, err := llm.New(llm.Options{Endpoints: []string{srv.URL}, Retry: retry.Policy{MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}

// spyPolicy wraps a policy: it records each completion's model,
// temperature and seed, and fails the requests of model whose messages
// contain failOn.
type spyPolicy struct {
	Policy
	model, failOn string

	mu    sync.Mutex
	temps map[string][]float64 // model → temperatures sent
	seeds map[string][]int64   // model → seeds sent
	kw    []map[string]any     // chat_template_kwargs sent
}

func (s *spyPolicy) Tokenize(ctx context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error) {
	s.mu.Lock()
	s.kw = append(s.kw, req.ChatTemplateKwargs)
	s.mu.Unlock()
	if s.failOn != "" && req.Model == s.model {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, s.failOn) {
				return llm.TokenizeResult{}, errors.New("injected failure")
			}
		}
	}
	return s.Policy.Tokenize(ctx, req)
}

func (s *spyPolicy) Complete(ctx context.Context, req llm.CompletionRequest) ([]llm.Completion, error) {
	s.mu.Lock()
	if s.temps == nil {
		s.temps, s.seeds = map[string][]float64{}, map[string][]int64{}
	}
	s.temps[req.Model] = append(s.temps[req.Model], req.Temperature)
	if req.Seed != nil {
		s.seeds[req.Model] = append(s.seeds[req.Model], *req.Seed)
	}
	s.mu.Unlock()
	return s.Policy.Complete(ctx, req)
}

// newSimWithAdapter is newSim with the adapter "ca" loaded.
func newSimWithAdapter(t *testing.T) *llm.Client {
	t.Helper()
	_, client := newSim(t)
	if err := client.LoadLoRA(context.Background(), "ca", "/adapters/ca"); err != nil {
		t.Fatal(err)
	}
	return client
}
