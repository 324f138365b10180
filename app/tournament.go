package app

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

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// TournamentOptions are `parley tournament`'s settings beside its file.
type TournamentOptions struct {
	// Dir is the tournament directory (created, or resumed).
	Dir string
	// RetryFailed plays again the games recorded as failed.
	RetryFailed bool
	// Scorer, if set, scores the games instead of the game's own scorer:
	// a game without one (seed 000's deliberation) is played only so,
	// scored by a run's judge (parley league crossplay).
	Scorer reward.Judge
	// Progress, if set, is called after every game recorded.
	Progress func(done, failed, total int)
	// Logger logs progress; nil means none.
	Logger *zap.Logger
}

// Tournament plays the tournament t describes into opts.Dir: the games not
// recorded yet, resumable after a kill (eval/tournament).
func Tournament(ctx context.Context, t config.Tournament, opts TournamentOptions) (tournament.Summary, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	spec, _ := rollout.Lookup(t.Env)
	hook := spec.Tournament
	canon, err := t.Canonical()
	if err != nil {
		return tournament.Summary{}, err
	}
	rows, err := dataset.LoadPrompts(t.Scenarios, spec.LoadOptions())
	if err != nil {
		return tournament.Summary{}, fmt.Errorf("key scenarios: %w", err)
	}
	var files tournament.Files
	if hook.Files != nil {
		if files.List, files.Where, err = hook.Files(t.Game); err != nil {
			return tournament.Summary{}, fmt.Errorf("key game: %w", err)
		}
	}
	shared := rollout.Shared{TurnTokens: t.Sampling.MaxTokens}
	if spec.UsesJudge {
		judge, err := tournamentJudge(t, log)
		if err != nil {
			return tournament.Summary{}, err
		}
		defer judge.Close()
		shared.Judge = judge
	}
	game, err := rollout.NewGame(t.Env, t.Game, shared)
	if err != nil {
		return tournament.Summary{}, fmt.Errorf("key game: %w", err)
	}
	for _, p := range rows {
		if err := game.Validate(p); err != nil {
			return tournament.Summary{}, fmt.Errorf("key scenarios: %s: row %s: %w", t.Scenarios, p.ID, err)
		}
	}
	scorer := opts.Scorer
	if scorer == nil {
		if spec.Scorer == nil {
			return tournament.Summary{}, fmt.Errorf("the %s game has no scorer of its own to score its tournament games: its games are scored by a run's judge (parley league crossplay RUN)", t.Env)
		}
		if scorer, err = spec.Scorer(t.Game); err != nil {
			return tournament.Summary{}, fmt.Errorf("key game: the %s game's scorer: %w", t.Env, err)
		}
	}
	agents, err := newTournamentAgents(t, log)
	if err != nil {
		return tournament.Summary{}, err
	}
	defer agents.close()
	topK := t.Sampling.TopK
	if topK == 0 {
		topK = -1
	}
	return tournament.Run(ctx, tournament.Options{
		Dir: opts.Dir, Spec: canon, Canonical: config.CanonicalTournament, Files: files,
		Plan: tournament.Plan{Agents: t.AgentNames(), Rounds: t.Rounds, Schedule: t.Schedule, Conditions: t.Conditions,
			Condition: hook.Condition},
		Scenarios: rows, Seed: t.Seed, Game: game, Seats: hook.Seats, Scorer: scorer,
		Players: agents.players, Prepare: func(ctx context.Context) error { return agents.prepare(ctx, t) },
		Sampling:           llm.Sampling{MaxTokens: t.Sampling.MaxTokens, Temperature: t.Sampling.Temperature, TopP: t.Sampling.TopP, TopK: topK},
		ChatTemplateKwargs: map[string]any{"enable_thinking": t.Sampling.EnableThinking},
		Concurrency:        t.Concurrency, MaxAttempts: t.MaxAttempts, RetryWait: t.RetryWait, RetryFailed: opts.RetryFailed,
		Progress: opts.Progress, Logger: log,
	})
}

// TournamentReport writes the report of the tournament in dir into out
// (its frozen spec names the game, whose analysis draws it) and returns
// the report's path.
func TournamentReport(dir, out string) (string, error) {
	b, err := tournament.ReadSpec(dir)
	if err != nil {
		return "", err
	}
	t, err := config.ParseTournament(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, tournament.SpecFile), err)
	}
	spec, _ := rollout.Lookup(t.Env)
	in := rollout.TournamentReport{Section: t.Game, Analysis: t.Analysis, Seed: t.Seed, Rounds: t.Rounds,
		Schedule: t.Schedule, Conditions: t.Conditions}
	for _, a := range t.Agents {
		in.Agents = append(in.Agents, rollout.TournamentAgent{Name: a.Name, Family: a.Family, OpenWeights: a.OpenWeights})
	}
	return tournament.WriteReport(dir, out, spec.Tournament, in)
}

// tournamentJudge is the chat client of the judge a tournament's game
// consults.
func tournamentJudge(t config.Tournament, log *zap.Logger) (*chat.Client, error) {
	key, err := secretFromEnv("judge.api_key_env", t.Judge.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	c, err := chat.New(chat.Options{Name: "judge", BaseURL: t.Judge.BaseURL, Model: t.Judge.Model, APIKey: key,
		Concurrency: t.Judge.Concurrency, Timeout: t.Judge.Timeout, DisableStructuredOutput: !t.Judge.StructuredOutput,
		Retry: tournamentRetry(retry.Default, t.Judge.MaxRetries, t), Logger: log.Named("judge")})
	if err != nil {
		return nil, fmt.Errorf("key judge: %w", err)
	}
	return c, nil
}

// tournamentAgents holds the agents' players and the clients behind them:
// one policy client per distinct endpoint (so its per-endpoint bound holds
// across the agents that share it), one chat client per external agent.
type tournamentAgents struct {
	players map[string]rollout.Player
	tokens  map[string]*llm.Client // by endpoint URL
	bridges map[string]*rollout.Bridge
	chats   []*chat.Client
	// checks check an agent's server (and load its adapter), by name.
	checks map[string]func(context.Context) error
}

func (p *tournamentAgents) close() {
	for _, c := range p.tokens {
		c.Close()
	}
	for _, c := range p.chats {
		_ = c.Close()
	}
}

// newTournamentAgents builds every agent's player; adapters named with
// adapter_path and trained agents' checkpoints are loaded by prepare.
func newTournamentAgents(t config.Tournament, log *zap.Logger) (*tournamentAgents, error) {
	p := &tournamentAgents{players: map[string]rollout.Player{}, tokens: map[string]*llm.Client{}, bridges: map[string]*rollout.Bridge{},
		checks: map[string]func(context.Context) error{}}
	limits := map[string]int{}
	keys := map[string]string{}
	for _, a := range t.Agents {
		if a.Kind == dataset.PolicyExternal {
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
		key, err := secretFromEnv("agents[].api_key_env", keys[ep])
		if err != nil {
			p.close()
			return nil, err
		}
		c, err := llm.New(llm.Options{Endpoints: []string{ep}, APIKey: key, MaxConcurrentPerEndpoint: limits[ep],
			RequestTimeout: t.RequestTimeout, Retry: tournamentRetry(llm.DefaultRetry, t.MaxRetries, t), Logger: log.Named("agents"), JitterSeed: t.Seed})
		if err != nil {
			p.close()
			return nil, fmt.Errorf("endpoint %s: %w", ep, err)
		}
		p.tokens[ep] = c
	}
	for i := range t.Agents {
		a := t.Agents[i]
		key := fmt.Sprintf("agents[%d] (%s)", i, a.Name)
		switch a.Kind {
		case dataset.PolicyEndpoint, dataset.PolicyTrained:
			c := p.tokens[a.Endpoint]
			if p.bridges[a.Endpoint] == nil {
				p.bridges[a.Endpoint] = rollout.NewBridge(c)
			}
			pl := rollout.Player{Kind: dataset.PolicyEndpoint, Model: a.Model, Endpoint: a.Endpoint, Tokens: c, Bridge: p.bridges[a.Endpoint]}
			p.checks[a.Name] = c.Health
			if a.Adapter != "" {
				pl.Kind, pl.Model = dataset.PolicyAdapter, a.Adapter
			}
			adapter, adapterPath := a.Adapter, a.AdapterPath
			if a.Kind == dataset.PolicyTrained {
				name, path, err := newestCheckpoint(a)
				if err != nil {
					p.close()
					return nil, fmt.Errorf("key %s.run: %w", key, err)
				}
				pl.Kind, pl.Model = dataset.PolicyTrained, name
				adapter, adapterPath = name, path
			}
			p.players[a.Name] = pl
			if adapterPath != "" {
				p.checks[a.Name] = func(ctx context.Context) error {
					if err := c.Health(ctx); err != nil {
						return err
					}
					return c.LoadLoRA(ctx, adapter, adapterPath)
				}
			}
		case dataset.PolicyExternal:
			apiKey, err := secretFromEnv(key+".api_key_env", a.APIKeyEnv)
			if err != nil {
				p.close()
				return nil, err
			}
			c, err := chat.New(chat.Options{Name: a.Name, BaseURL: a.BaseURL, Model: a.Model, APIKey: apiKey, Concurrency: a.MaxConcurrent,
				Temperature: t.Sampling.Temperature, MaxTokens: t.Sampling.MaxTokens, Timeout: t.RequestTimeout,
				Retry: tournamentRetry(retry.Default, t.MaxRetries, t), Logger: log.Named(a.Name)})
			if err != nil {
				p.close()
				return nil, fmt.Errorf("key %s: %w", key, err)
			}
			p.chats = append(p.chats, c)
			p.players[a.Name] = rollout.Player{Kind: dataset.PolicyExternal, Model: a.Model, Endpoint: a.BaseURL, Chat: c}
		}
	}
	return p, nil
}

// prepare runs the agents' checks: health (when preflight is on) and the
// adapter loads (always: a resumed tournament needs them again).
func (p *tournamentAgents) prepare(ctx context.Context, t config.Tournament) error {
	var errs []error
	for _, a := range t.Agents {
		check := p.checks[a.Name]
		if check == nil {
			continue
		}
		if !t.Preflight && a.AdapterPath == "" && a.Kind != dataset.PolicyTrained {
			continue
		}
		if err := check(ctx); err != nil {
			errs = append(errs, fmt.Errorf("agent %s (%s, %s): %w", a.Name, a.Kind, a.Endpoint, err))
		}
	}
	return errors.Join(errs...)
}

// tournamentRetry is def with maxRetries retries after the first attempt
// (0: a single attempt) and, when the file's retry_wait is shorter than
// the default backoff, that backoff.
func tournamentRetry(def retry.Policy, maxRetries int, t config.Tournament) retry.Policy {
	p := retry.Count(def, maxRetries)
	if t.RetryWait > 0 && t.RetryWait < 500*time.Millisecond {
		p.BackoffBase, p.BackoffMax = t.RetryWait, 10*t.RetryWait
	}
	return p
}

// newestCheckpoint finds the newest finished checkpoint of a run: the
// highest checkpoints/step-N holding DONE.
func newestCheckpoint(a config.Agent) (name, path string, err error) {
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
