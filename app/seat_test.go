package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
	"gopkg.in/yaml.v3"
)

// TestCrossPlayCarriesJudge: the cross-play tournament's judge is the
// run's judge, its timeout and rate limits included (they were dropped on
// the way through the tournament file's keys, which had none).
func TestCrossPlayCarriesJudge(t *testing.T) {
	const url = "http://127.0.0.1:9"
	run := strings.Replace(endowmentLeague, "concurrency: 8,", "concurrency: 8, timeout: 7s, requests_per_minute: 120, tokens_per_minute: 9000, max_retries: 5,", 1)
	rd := crossPlayRun(t, url, run, "requester")
	cfg, err := config.Parse([]byte(fmt.Sprintf(run, url, url)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Judge.Timeout != 7*time.Second {
		t.Fatalf("the run's judge.timeout = %s, want 7s", cfg.Judge.Timeout)
	}
	tt, _, err := crossPlaySpec(cfg, rd, []int{0, 2}, CrossPlayOptions{Endpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	canon, err := tt.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Judge map[string]any `yaml:"judge"`
	}
	if err := yaml.Unmarshal(canon, &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"base_url": url + "/v1", "model": "sim-judge", "timeout": "7s",
		"requests_per_minute": "120", "tokens_per_minute": "9000", "max_retries": "5", "concurrency": "8"} {
		if got := fmt.Sprint(doc.Judge[key]); got != want {
			t.Errorf("cross-play judge.%s = %s, want %s (the run's)\n%s", key, got, want, canon)
		}
	}
	o := chatOptions("judge", tt.Judge, "", zap.NewNop())
	if o.Timeout != 7*time.Second || o.RequestsPerMinute != 120 || o.TokensPerMinute != 9000 || o.Concurrency != 8 {
		t.Errorf("the cross-play judge's client options %+v lack the run's timeout and rate limits", o)
	}
}

// TestRoleSeatPlayers: every kind of roles.<role> gets its player from the
// one seat builder: the base model and an adapter on the policy's client,
// another server's client of its own, an external chat client, a script.
func TestRoleSeatPlayers(t *testing.T) {
	cfg, err := config.Parse([]byte(`game: {env: endowment}
judge: {kind: game, base_url: http://j/v1, model: j}
grpo: {mask: dialogue}
policy: {endpoints: ["http://127.0.0.1:9"], model: pol}
roles:
  requester:
    policy: pool
    pool:
      - {policy: base}
      - {policy: adapter, model: persuader}
      - {policy: endpoint, endpoints: ["http://127.0.0.1:10"], model: other}
      - {policy: external, base_url: "http://127.0.0.1:11/v1", model: gpt}
      - {policy: scripted}
`))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := newPolicy(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer policy.Close()
	_, pools, closeAll, err := newPlayers(cfg, policy, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	want := []struct {
		kind                   dataset.PolicyKind
		model, endpoint        string
		onPolicy, tokens, chat bool
	}{
		{dataset.PolicyBase, "pol", "", true, true, false},
		{dataset.PolicyAdapter, "persuader", "", true, true, false},
		{dataset.PolicyEndpoint, "other", "http://127.0.0.1:10", false, true, false},
		{dataset.PolicyExternal, "gpt", "http://127.0.0.1:11/v1", false, false, true},
		{dataset.PolicyScripted, "scripted", "", false, false, false},
	}
	got := pools["requester"]
	if len(got) != len(want) {
		t.Fatalf("pool of %d players, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := got[i]
		if p.Kind != w.kind || p.Model != w.model || p.Endpoint != w.endpoint || (p.Tokens == rollout.Policy(policy)) != w.onPolicy ||
			(p.Tokens != nil) != w.tokens || (p.Chat != nil) != w.chat {
			t.Errorf("pool[%d] = %+v, want %+v", i, p, w)
		}
	}
}

// TestSeatServerSessionHeader: a role's seat on another vLLM server talks
// to it as the policy talks to its own: the session header goes too
// (before, only the policy's client sent it).
func TestSeatServerSessionHeader(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("X-Parley-Session"):
		default:
		}
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	cfg := config.Default()
	cfg.Policy.SessionHeader, cfg.Policy.MaxRetries = "X-Parley-Session", 0
	b := newSeats(nil, "", policyConnection(cfg), false, zap.NewNop())
	defer b.close()
	sp, err := b.build(cfg.RoleSeat("B", "roles.B", config.RoleModel{Policy: dataset.PolicyEndpoint, Endpoints: []string{srv.URL}, Model: "m"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := llm.WithSession(context.Background(), llm.Session{ID: "r1/B"})
	_, _ = sp.player.Tokens.(*llm.Client).Complete(ctx, llm.CompletionRequest{Model: "m", Prompt: []int32{1}, Sampling: llm.Sampling{MaxTokens: 1}})
	select {
	case h := <-got:
		if h != "r1/B" {
			t.Errorf("session header %q, want r1/B", h)
		}
	default:
		t.Error("the server got no request")
	}
}

// TestTournamentSeatsShareServer: agents on one endpoint share its client
// and bridge; another endpoint has its own.
func TestTournamentSeatsShareServer(t *testing.T) {
	tt := mustSpec(t, `judge: {base_url: http://127.0.0.1:9/v1, model: j}
agents:
  - {name: a, endpoint: "http://127.0.0.1:9", model: m}
  - {name: b, endpoint: "http://127.0.0.1:9", model: m, adapter: p}
  - {name: c, endpoint: "http://127.0.0.1:10", model: m}
`)
	p, err := newTournamentAgents(tt, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	a, b, c := p.players["a"], p.players["b"], p.players["c"]
	if a.Tokens != b.Tokens || a.Bridge != b.Bridge || a.Bridge == nil || a.Tokens == c.Tokens || a.Bridge == c.Bridge {
		t.Errorf("a %p/%p, b %p/%p, c %p/%p: want a and b to share client and bridge, c its own", a.Tokens, a.Bridge, b.Tokens, b.Bridge, c.Tokens, c.Bridge)
	}
	if b.Kind != dataset.PolicyAdapter || b.Model != "p" || a.Kind != dataset.PolicyEndpoint || a.Model != "m" {
		t.Errorf("a %s %s, b %s %s: want endpoint m and adapter p", a.Kind, a.Model, b.Kind, b.Model)
	}
}
