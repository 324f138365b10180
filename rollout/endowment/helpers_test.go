package endowment_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

// mustSim is the game's serve-sim answers with options.
func mustSim(t testing.TB, options map[string]string) *endowment.Sim {
	t.Helper()
	s, err := endowment.NewSim(options)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startSim runs serve-sim behind a real HTTP server for one test; opts
// without Games answer the game's prompts with mustSim(t, nil).
func startSim(t testing.TB, opts sim.Options) *httptest.Server {
	t.Helper()
	if opts.Games == nil {
		opts.Games = []sim.Answerer{mustSim(t, nil)}
	}
	srv, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	return ts
}

// mustPost posts body as JSON, requires a 200 answer and decodes it into v.
func mustPost(t testing.TB, url string, body, v any) {
	t.Helper()
	buf, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s = %d %s (%v), want 200", url, resp.StatusCode, raw, err)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("POST %s: decode %s: %v", url, raw, err)
		}
	}
}

// chatContent is the content of a chat completion's first choice.
type chatContent struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}
