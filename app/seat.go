package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// connection is how parley talks to a seat's vLLM servers: a run's
// policy.* settings, or a tournament file's.
type connection struct {
	// maxConcurrent bounds each endpoint's requests in flight, unless the
	// seat bounds them itself.
	maxConcurrent  int
	requestTimeout time.Duration
	// maxRetries and retry give a client's retry policy: retry(def, n)
	// with def the client's default policy.
	maxRetries int
	retry      func(def retry.Policy, maxRetries int) retry.Policy
	// healthInterval, sessionHeader, sessionBound and resolveInterval are
	// policy.*'s (zero in a tournament: no background checks, no session
	// header, the client's defaults).
	healthInterval, resolveInterval time.Duration
	sessionHeader                   string
	sessionBound                    float64
	seed                            int64
}

// policyConnection is the run's connection to its policy servers, which
// every seat on another vLLM server keeps too.
func policyConnection(cfg config.Config) connection {
	p := cfg.Policy
	return connection{maxConcurrent: p.MaxConcurrentPerEndpoint, requestTimeout: p.RequestTimeout, maxRetries: p.MaxRetries, retry: retry.Count,
		healthInterval: p.HealthInterval, resolveInterval: p.ResolveInterval, sessionHeader: p.SessionHeader, sessionBound: p.SessionBound, seed: cfg.Run.Seed}
}

// newTokens is the one builder of token clients (llm.New): the policy's,
// and every seat's on a vLLM server of its own.
func newTokens(endpoints []string, apiKey string, maxConcurrent int, c connection, log *zap.Logger) (*llm.Client, error) {
	if maxConcurrent <= 0 {
		maxConcurrent = c.maxConcurrent
	}
	return llm.New(llm.Options{
		Endpoints: endpoints, APIKey: apiKey, MaxConcurrentPerEndpoint: maxConcurrent,
		RequestTimeout: c.requestTimeout, Retry: c.retry(llm.DefaultRetry, c.maxRetries),
		HealthInterval: c.healthInterval, SessionHeader: c.sessionHeader, SessionBound: c.sessionBound, ResolveInterval: c.resolveInterval,
		Logger: log, JitterSeed: c.seed,
	})
}

// chatOptions is the one builder of chat clients' options, from the
// chat-endpoint block of the judge, the generator, a tournament's judge or
// an external seat; apiKey is the key its api_key_env names. Callers add
// what is theirs (a cache, sampling).
func chatOptions(name string, e config.ChatEndpoint, apiKey string, log *zap.Logger) chat.Options {
	return chat.Options{
		Name: name, BaseURL: e.BaseURL, Model: e.Model, APIKey: apiKey,
		Concurrency: e.Concurrency, RequestsPerMinute: e.RequestsPerMinute, TokensPerMinute: e.TokensPerMinute,
		Retry: retryPolicy(e.MaxRetries), Timeout: e.Timeout, DisableStructuredOutput: !e.StructuredOutput,
		Logger: log.Named(name),
	}
}

// seatPlayer is a seat's player and what readies its server before the
// first game.
type seatPlayer struct {
	player rollout.Player
	// health checks the seat's own server (nil: none to check).
	health func(context.Context) error
	// load loads the seat's adapter from its adapter_path (nil: none).
	load func(context.Context) error
}

// seats is the one builder of players from seats (config.Seat): a run's
// roles and a tournament's agents. It owns the clients it makes.
type seats struct {
	// policy and policyModel are the run's policy (base seats, adapters
	// on the policy's servers); nil in a tournament.
	policy      *llm.Client
	policyModel string
	conn        connection
	// shared gives the seats on one endpoint one client (and bridge), named
	// "agents" in the log, as a tournament's agents; otherwise each seat
	// has its own.
	shared  bool
	log     *zap.Logger
	tokens  map[string]*llm.Client
	bridges map[string]*rollout.Bridge
	closers []func()
}

// newSeats is a seat builder over the run's policy client (nil in a
// tournament) and conn; shared gives the seats on one endpoint one client.
func newSeats(policy *llm.Client, policyModel string, conn connection, shared bool, log *zap.Logger) *seats {
	return &seats{policy: policy, policyModel: policyModel, conn: conn, shared: shared, log: log,
		tokens: map[string]*llm.Client{}, bridges: map[string]*rollout.Bridge{}}
}

// close closes every client the builder made.
func (b *seats) close() {
	for _, c := range b.closers {
		c()
	}
}

// build builds seat s's player: the policy's base model or adapter, a
// vLLM server's model or adapter, a run's newest checkpoint, an external
// chat model, or the game's own script.
func (b *seats) build(s config.Seat) (seatPlayer, error) {
	switch s.Kind {
	case dataset.PolicyScripted:
		model := s.Model
		if model == "" {
			model = "scripted"
		}
		return seatPlayer{player: rollout.Player{Kind: s.Kind, Model: model}}, nil
	case dataset.PolicyExternal:
		key, err := secretFromEnv(s.Key+".api_key_env", s.Chat.APIKeyEnv)
		if err != nil {
			return seatPlayer{}, err
		}
		o := chatOptions(s.Name, s.Chat, key, b.log)
		o.Retry = b.conn.retry(retry.Default, s.Chat.MaxRetries)
		o.Temperature, o.MaxTokens = s.Sampling.Temperature, s.Sampling.MaxTokens
		c, err := chat.New(o)
		if err != nil {
			return seatPlayer{}, fmt.Errorf("config key %s: %w", s.Key, err)
		}
		b.closers = append(b.closers, func() { _ = c.Close() })
		return seatPlayer{player: rollout.Player{Kind: s.Kind, Model: s.Chat.Model, Endpoint: s.Chat.BaseURL, Chat: c}}, nil
	}
	pl := rollout.Player{Kind: s.Kind, Model: s.Model}
	if pl.Model == "" {
		pl.Model = b.policyModel
	}
	var sp seatPlayer
	tokens := b.policy
	if len(s.Endpoints) > 0 {
		c, err := b.server(s)
		if err != nil {
			return seatPlayer{}, err
		}
		tokens, pl.Endpoint = c, strings.Join(s.Endpoints, ",")
		if b.shared {
			pl.Bridge, sp.health = b.bridges[pl.Endpoint], c.Health
		}
	} else if s.Kind == dataset.PolicyEndpoint || s.Kind == dataset.PolicyTrained {
		return seatPlayer{}, fmt.Errorf("config key %s: a %s seat names its server's endpoints", s.Key, s.Kind)
	}
	adapter, adapterPath := s.Adapter, s.AdapterPath
	if s.Kind == dataset.PolicyTrained {
		name, path, err := newestCheckpoint(s.Name, s.Run)
		if err != nil {
			return seatPlayer{}, fmt.Errorf("key %s.run: %w", s.Key, err)
		}
		adapter, adapterPath = name, path
	}
	if adapter != "" {
		pl.Model = adapter
	}
	if tokens != nil {
		pl.Tokens = tokens
	}
	if adapterPath != "" && tokens != nil {
		sp.load = func(ctx context.Context) error { return tokens.LoadLoRA(ctx, adapter, adapterPath) }
	}
	sp.player = pl
	return sp, nil
}

// server is the token client of seat s's own servers: one per endpoint
// when the seats share them, else the seat's own.
func (b *seats) server(s config.Seat) (*llm.Client, error) {
	ep := strings.Join(s.Endpoints, ",")
	if c, ok := b.tokens[ep]; ok && b.shared {
		return c, nil
	}
	key, err := secretFromEnv(s.Key+".api_key_env", s.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	name := s.Name
	if b.shared {
		name = "agents"
	}
	c, err := newTokens(s.Endpoints, key, s.MaxConcurrent, b.conn, b.log.Named(name))
	if err != nil {
		if b.shared {
			return nil, fmt.Errorf("endpoint %s: %w", ep, err)
		}
		return nil, fmt.Errorf("config key %s: %w", s.Key, err)
	}
	b.closers = append(b.closers, c.Close)
	if b.shared {
		b.tokens[ep], b.bridges[ep] = c, rollout.NewBridge(c)
	}
	return c, nil
}

// ready runs a seat's checks: its server's health (when check is set or an
// adapter is to be loaded), then its adapter's load.
func (sp seatPlayer) ready(ctx context.Context, check bool) error {
	if sp.health != nil && (check || sp.load != nil) {
		if err := sp.health(ctx); err != nil {
			return err
		}
	}
	if sp.load != nil {
		return sp.load(ctx)
	}
	return nil
}
