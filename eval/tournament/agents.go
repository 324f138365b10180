package tournament

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// pool holds the agents' players and the clients behind them: one policy
// client per distinct endpoint (so its per-endpoint bound holds across the
// agents that share it), one chat client per external agent.
type pool struct {
	players map[string]rollout.Player
	tokens  map[string]*llm.Client // by endpoint URL
	bridges map[string]*rollout.Bridge
	chats   []*chat.Client
	// preflight checks a server: by agent name.
	checks map[string]func(context.Context) error
}

func (p *pool) close() {
	for _, c := range p.tokens {
		c.Close()
	}
	for _, c := range p.chats {
		_ = c.Close()
	}
}

func secret(name, key string) (string, error) {
	if name == "" {
		return "", nil
	}
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("key %s names the environment variable %s, which is not set", key, name)
	}
	return v, nil
}

// newPool builds every agent's player; adapters named with adapter_path
// and trained agents' checkpoints are loaded on their endpoints.
func newPool(ctx context.Context, s Spec, log *zap.Logger) (*pool, error) {
	p := &pool{players: map[string]rollout.Player{}, tokens: map[string]*llm.Client{}, bridges: map[string]*rollout.Bridge{},
		checks: map[string]func(context.Context) error{}}
	limits := map[string]int{}
	keys := map[string]string{}
	for _, a := range s.Agents {
		if a.Kind == KindExternal {
			continue
		}
		if l, ok := limits[a.Endpoint]; !ok || a.MaxConcurrent < l {
			limits[a.Endpoint] = a.MaxConcurrent
		}
		if a.APIKeyEnv != "" {
			keys[a.Endpoint] = a.APIKeyEnv
		}
	}
	eps := make([]string, 0, len(limits))
	for ep := range limits {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	for _, ep := range eps {
		key, err := secret(keys[ep], "agents[].api_key_env")
		if err != nil {
			p.close()
			return nil, err
		}
		c, err := llm.New(llm.Options{Endpoints: []string{ep}, APIKey: key, MaxConcurrentPerEndpoint: limits[ep],
			RequestTimeout: s.RequestTimeout, Retry: retryPolicy(llm.DefaultRetry, s.MaxRetries, s), Logger: log.Named("agents"), JitterSeed: s.Seed})
		if err != nil {
			p.close()
			return nil, fmt.Errorf("endpoint %s: %w", ep, err)
		}
		p.tokens[ep] = c
	}
	for i, a := range s.Agents {
		key := fmt.Sprintf("agents[%d] (%s)", i, a.Name)
		switch a.Kind {
		case KindEndpoint, KindTrained:
			c := p.tokens[a.Endpoint]
			if p.bridges[a.Endpoint] == nil {
				p.bridges[a.Endpoint] = rollout.NewBridge(c)
			}
			pl := rollout.Player{Kind: dataset.PolicyEndpoint, Model: a.Model, Endpoint: a.Endpoint, Tokens: c, Bridge: p.bridges[a.Endpoint]}
			p.checks[a.Name] = func(ctx context.Context) error {
				if err := c.Health(ctx); err != nil {
					return err
				}
				return nil
			}
			if a.Adapter != "" {
				pl.Kind, pl.Model = dataset.PolicyAdapter, a.Adapter
			}
			if a.Kind == KindTrained {
				name, path, err := newestCheckpoint(a)
				if err != nil {
					p.close()
					return nil, fmt.Errorf("key %s.run: %w", key, err)
				}
				pl.Kind, pl.Model = dataset.PolicyTrained, name
				a.AdapterPath = path
				a.Adapter = name
			}
			p.players[a.Name] = pl
			if a.AdapterPath != "" {
				p.checks[a.Name] = func(ctx context.Context) error {
					if err := c.Health(ctx); err != nil {
						return err
					}
					return c.LoadLoRA(ctx, a.Adapter, a.AdapterPath)
				}
			}
		case KindExternal:
			apiKey, err := secret(a.APIKeyEnv, key+".api_key_env")
			if err != nil {
				p.close()
				return nil, err
			}
			c, err := chat.New(chat.Options{Name: a.Name, BaseURL: a.BaseURL, Model: a.Model, APIKey: apiKey, Concurrency: a.MaxConcurrent,
				Temperature: s.Sampling.Temperature, MaxTokens: s.Sampling.MaxTokens, Timeout: s.RequestTimeout,
				Retry: retryPolicy(retry.Default, s.MaxRetries, s), Logger: log.Named(a.Name)})
			if err != nil {
				p.close()
				return nil, fmt.Errorf("key %s: %w", key, err)
			}
			p.chats = append(p.chats, c)
			p.players[a.Name] = rollout.Player{Kind: dataset.PolicyExternal, Model: a.Model, Endpoint: a.BaseURL, Chat: c}
			p.checks[a.Name] = nil // an external API is not probed: its first game tells
		}
	}
	return p, nil
}

// prepare runs the agents' checks: health (when preflight is on) and the
// adapter loads (always: a resumed tournament needs them again).
func (p *pool) prepare(ctx context.Context, s Spec) error {
	var errs []error
	for _, a := range s.Agents {
		check := p.checks[a.Name]
		if check == nil {
			continue
		}
		if !s.Preflight && a.AdapterPath == "" && a.Kind != KindTrained {
			continue
		}
		if err := check(ctx); err != nil {
			where := a.Endpoint
			errs = append(errs, fmt.Errorf("agent %s (%s, %s): %w", a.Name, a.Kind, where, err))
		}
	}
	return errors.Join(errs...)
}

// retryPolicy is def with maxRetries retries after the first attempt (0:
// a single attempt) and, when the spec's retry_wait is shorter than the
// default backoff, that backoff.
func retryPolicy(def retry.Policy, maxRetries int, s Spec) retry.Policy {
	p := retry.Count(def, maxRetries)
	if b := backoffBase(s); b > 0 {
		p.BackoffBase, p.BackoffMax = b, 10*b
	}
	return p
}

func backoffBase(s Spec) time.Duration {
	if s.RetryWait > 0 && s.RetryWait < 500*time.Millisecond {
		return s.RetryWait
	}
	return 0
}

// newestCheckpoint finds the newest finished checkpoint of a run: the
// highest checkpoints/step-N holding DONE.
func newestCheckpoint(a AgentSpec) (name, path string, err error) {
	rd := dataset.RunDir(a.Run)
	entries, err := os.ReadDir(rd.CheckpointsDir())
	if err != nil {
		return "", "", err
	}
	best := -1
	for _, e := range entries {
		step, ok := dataset.ParseStepName(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(rd.DonePath(step)); err == nil && step > best {
			best = step
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
	}
	if best < 0 {
		return "", "", fmt.Errorf("%s holds no finished checkpoint (checkpoints/step-N/DONE)", rd.CheckpointsDir())
	}
	abs, err := filepath.Abs(rd.CheckpointDir(best))
	if err != nil {
		return "", "", err
	}
	return fmt.Sprintf("%s-%s", strings.ReplaceAll(a.Name, "/", "-"), dataset.StepName(best)), abs, nil
}
