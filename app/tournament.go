package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
		Dir: opts.Dir, Spec: canon, Canonical: config.TournamentIdentity, Files: files,
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
	o := chatOptions("judge", t.Judge, key, log)
	o.Retry = tournamentRetry(retry.Default, t.Judge.MaxRetries, t)
	c, err := chat.New(o)
	if err != nil {
		return nil, fmt.Errorf("key judge: %w", err)
	}
	return c, nil
}

// tournamentAgents holds the agents' players, what readies each, and the
// clients behind them (the seats builder's: one token client per distinct
// endpoint, so its per-endpoint bound holds across the agents that share
// it, one chat client per external agent).
type tournamentAgents struct {
	*seats
	players map[string]rollout.Player
	ready   map[string]seatPlayer
}

// newTournamentAgents builds every agent's player (config.Tournament.Seat);
// adapters named with adapter_path and trained agents' checkpoints are
// loaded by prepare.
func newTournamentAgents(t config.Tournament, log *zap.Logger) (*tournamentAgents, error) {
	conn := connection{requestTimeout: t.RequestTimeout, maxRetries: t.MaxRetries, seed: t.Seed,
		retry: func(def retry.Policy, n int) retry.Policy { return tournamentRetry(def, n, t) }}
	p := &tournamentAgents{seats: newSeats(nil, "", conn, true, log), players: map[string]rollout.Player{}, ready: map[string]seatPlayer{}}
	for i, a := range t.Agents {
		sp, err := p.build(t.Seat(i))
		if err != nil {
			p.close()
			return nil, err
		}
		p.players[a.Name], p.ready[a.Name] = sp.player, sp
	}
	return p, nil
}

// prepare readies the agents: their servers' health (when preflight is
// on) and the adapter loads (always: a resumed tournament needs them
// again).
func (p *tournamentAgents) prepare(ctx context.Context, t config.Tournament) error {
	var errs []error
	for _, a := range t.Agents {
		if err := p.ready[a.Name].ready(ctx, t.Preflight); err != nil {
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

// newestCheckpoint finds the newest finished checkpoint of agent's run:
// the highest checkpoints/step-N holding DONE, and its adapter's name.
func newestCheckpoint(agent, run string) (name, path string, err error) {
	rd := dataset.RunDir(run)
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
	return fmt.Sprintf("%s-%s", strings.ReplaceAll(agent, "/", "-"), dataset.StepName(best)), abs, nil
}
