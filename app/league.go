package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
)

// CrossPlayOptions are `parley league crossplay`'s settings.
type CrossPlayOptions struct {
	// Run is the run directory.
	Run string
	// Endpoint is the vLLM server the checkpoints play on, one of its own
	// (never the training's: its weight updates would abort the games).
	Endpoint string
	// Every keeps the checkpoints of every K-th step (0: the league's
	// snapshot_every, 1 without a league); UpTo the last step (0: the
	// newest checkpoint).
	Every, UpTo int
	// Rounds per condition (default 1), Concurrency the games in flight.
	Rounds, Concurrency int
	// Out is the cross-play directory (default RUN/crossplay/step-N).
	Out      string
	Progress func(done, failed, total int)
	Logger   *zap.Logger
}

// LeagueCrossPlay plays the run's checkpoints (and the base model, and
// the league's frozen agents that can take both seats) against each other
// in both seats on the curriculum's held-out rows (all rows when it has
// none), scored by the game's own scorer or, in a game without one (seed
// 000's deliberation), by the run's judge, through the tournament engine
// (resumable after a kill), then writes the cross-play report. It returns
// the report's path.
func LeagueCrossPlay(ctx context.Context, o CrossPlayOptions) (string, tournament.Summary, error) {
	var sum tournament.Summary
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	rd := dataset.RunDir(o.Run)
	b, err := os.ReadFile(rd.ConfigPath())
	if err != nil {
		return "", sum, fmt.Errorf("league crossplay: %s is not a run directory: %w", o.Run, err)
	}
	cfg, err := config.Parse(b)
	if err != nil {
		return "", sum, fmt.Errorf("league crossplay: %s: %w", rd.ConfigPath(), err)
	}
	spec, _ := rollout.Lookup(cfg.Game.Env)
	if spec.Tournament == nil {
		return "", sum, fmt.Errorf("league crossplay: game %s has no two-seat tournament (rollout.Spec.Tournament) to play cross-play with", cfg.Game.Env)
	}
	every := o.Every
	for _, r := range cfg.Roles {
		if every == 0 && r.Policy == dataset.PolicyLeague {
			every = max(r.League.SnapshotEvery, 1)
		}
	}
	steps, err := crossPlaySteps(rd, max(every, 1), o.UpTo)
	if err != nil {
		return "", sum, err
	}
	t, skipped, err := crossPlaySpec(cfg, rd, steps, o)
	if err != nil {
		return "", sum, err
	}
	out := o.Out
	if out == "" {
		out = filepath.Join(rd.Root(), "crossplay", dataset.StepName(steps[len(steps)-1]))
	}
	topts := TournamentOptions{Dir: out, Progress: o.Progress, Logger: log}
	scale := spec.ScoreScale
	if spec.Scorer == nil {
		judge, closeJudge, err := newJudge(cfg, out, nil, log)
		if err != nil {
			return "", sum, fmt.Errorf("league crossplay: %s: %w", rd.ConfigPath(), err)
		}
		defer closeJudge()
		topts.Scorer, scale = judge, reward.ScaleOf(judge)
	}
	sum, err = Tournament(ctx, t, topts)
	if err != nil {
		return "", sum, fmt.Errorf("league crossplay: %w", err)
	}
	recs, err := tournament.ReadRecords(out)
	if err != nil {
		return "", sum, err
	}
	var games []league.CrossGame
	seats := spec.Tournament.Seats
	for _, r := range recs {
		g := league.CrossGame{Seats: r.Match.Seats, Failed: r.Failed || !r.Rollout.Judged, Score: float64(r.Rollout.Score)}
		for i, s := range seats {
			if ro := r.Rollout.Role(s); ro != nil && ro.Scored {
				if i == 0 {
					g.Seat0Score = float64(ro.Score)
				} else {
					g.Seat1Score = float64(ro.Score)
				}
			}
		}
		games = append(games, g)
	}
	cp := league.AnalyseCrossPlay(t.AgentNames(), seats, games, spec.Tournament.Cooperative)
	var lg *league.State
	if st, err := league.LoadBefore(rd, cfg.Run.Name, steps[len(steps)-1]+1, nil); err == nil && len(st.Roles) > 0 {
		lg = st
	} else if err != nil {
		log.Warn("the league's ratings are not in the report", zap.Error(err))
	}
	path, err := league.WriteCrossPlayReport(out, cp, lg, skipped, scale)
	return path, sum, err
}

// crossPlaySteps are the run's checkpoints holding DONE at steps that are
// multiples of every, up to upTo (0: all), with 0 (the base model) first.
func crossPlaySteps(rd dataset.RunDir, every, upTo int) ([]int, error) {
	entries, err := os.ReadDir(rd.CheckpointsDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("league crossplay: %w", err)
	}
	steps := []int{0}
	for _, e := range entries {
		n, ok := dataset.ParseStepName(e.Name())
		if !ok || n%every != 0 || (upTo > 0 && n > upTo) {
			continue
		}
		if _, err := os.Stat(rd.DonePath(n)); err == nil {
			steps = append(steps, n)
		}
	}
	if len(steps) < 2 {
		return nil, fmt.Errorf("league crossplay: %s holds no finished checkpoint at a multiple of %d steps", rd.CheckpointsDir(), every)
	}
	return steps, nil
}

// crossPlaySpec is the tournament of the cross-play, built as a typed
// value: the run's game, its section and judge (its chat endpoint whole:
// timeout and rate limits too), the checkpoints of steps on endpoint, the
// league's frozen agents that are served models (scripted ones play one
// seat: returned as skipped).
func crossPlaySpec(cfg config.Config, rd dataset.RunDir, steps []int, o CrossPlayOptions) (config.Tournament, []string, error) {
	if o.Endpoint == "" {
		return config.Tournament{}, nil, errors.New("league crossplay: --endpoint is required: a vLLM server of its own, serving " + cfg.Policy.Model)
	}
	scen := cfg.Curriculum.Path
	rows, err := LoadCurriculum(cfg)
	if err != nil {
		return config.Tournament{}, nil, fmt.Errorf("league crossplay: %w", err)
	}
	if held := dataset.SelectSplit(rows, dataset.SplitEval); len(held) > 0 {
		scen = filepath.Join(rd.Root(), "crossplay", "heldout.jsonl")
		if err := os.MkdirAll(filepath.Dir(scen), 0o755); err != nil {
			return config.Tournament{}, nil, fmt.Errorf("league crossplay: %w", err)
		}
		if err := dataset.WritePromptsJSONL(scen, held); err != nil {
			return config.Tournament{}, nil, fmt.Errorf("league crossplay: %w", err)
		}
	}
	t, err := config.DefaultTournament(cfg.Game.Env)
	if err != nil {
		return config.Tournament{}, nil, fmt.Errorf("league crossplay: %w", err)
	}
	t.Seed, t.Rounds, t.Schedule, t.Scenarios = cfg.Run.Seed, max(o.Rounds, 1), tournament.ScheduleBoth, scen
	if t.Game != nil {
		// The run's section, copied: the cross-play's is its own.
		reflect.ValueOf(t.Game).Elem().Set(reflect.ValueOf(cfg.Game.Active()).Elem())
	}
	t.Judge = cfg.Judge.ChatEndpoint
	t.Judge.Concurrency = max(t.Judge.Concurrency, 1)
	t.Sampling = config.TournamentSampling{Temperature: cfg.Sampling.Temperature, TopP: cfg.Sampling.TopP, TopK: cfg.Sampling.TopK,
		MaxTokens: cfg.Sampling.MaxTokens, EnableThinking: cfg.Policy.EnableThinking}
	t.Concurrency, t.MaxAttempts, t.RequestTimeout, t.Preflight = max(o.Concurrency, 8), 2, cfg.Policy.RequestTimeout, true
	for _, s := range steps {
		a := config.Agent{Name: "base", Endpoint: o.Endpoint, Model: cfg.Policy.Model, MaxConcurrent: max(o.Concurrency, 8)}
		if s > 0 {
			dir, err := train.CheckpointAdapter(rd, s)
			if err != nil {
				return config.Tournament{}, nil, fmt.Errorf("league crossplay: %w", err)
			}
			a.Name, a.Adapter, a.AdapterPath = dataset.StepName(s), fmt.Sprintf("xp-%s-%s", cfg.Run.Name, dataset.StepName(s)), dir
		}
		t.Agents = append(t.Agents, a)
	}
	var skipped []string
	for role, r := range cfg.Roles {
		if r.Policy != dataset.PolicyLeague {
			continue
		}
		for i, m := range r.Pool {
			id := fmt.Sprintf("%s-pool%d", role, i) // league.FrozenID(i); agent names take letters, digits, . _ -
			if a, ok := crossPlayAgent(id, cfg.RoleSeat(role, fmt.Sprintf("roles.%s.pool[%d]", role, i), m), o.Endpoint, cfg.Policy.Model); ok {
				t.Agents = append(t.Agents, a)
			} else {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", id, m.Policy))
			}
		}
	}
	if err := t.Validate(); err != nil {
		return config.Tournament{}, nil, fmt.Errorf("league crossplay: the cross-play tournament: %w", err)
	}
	return t, skipped, nil
}

// crossPlayAgent is the agent id of a league's frozen seat s in
// cross-play: an adapter on the cross-play's endpoint, another vLLM
// server's model, an external model. A seat that cannot take both seats
// (scripted) has none.
func crossPlayAgent(id string, s config.Seat, endpoint, policyModel string) (config.Agent, bool) {
	switch s.Kind {
	case dataset.PolicyAdapter:
		return config.Agent{Name: id, Endpoint: endpoint, Model: policyModel, Adapter: s.Adapter, AdapterPath: s.AdapterPath}, true
	case dataset.PolicyEndpoint:
		return config.Agent{Name: id, Endpoint: s.Endpoints[0], Model: s.Model, APIKeyEnv: s.APIKeyEnv}, true
	case dataset.PolicyExternal:
		return config.Agent{Name: id, Kind: dataset.PolicyExternal, BaseURL: s.Chat.BaseURL, Model: s.Chat.Model, APIKeyEnv: s.Chat.APIKeyEnv}, true
	}
	return config.Agent{}, false
}

// crossPlayOptions is train.crossplay_every's cross-play beside training:
// LeagueCrossPlay up to each step, on train.crossplay_endpoint.
func crossPlayOptions(cfg config.Config, rd dataset.RunDir, log *zap.Logger) train.CrossPlayOptions {
	if cfg.Train.CrossPlayEvery <= 0 {
		return train.CrossPlayOptions{}
	}
	return train.CrossPlayOptions{Every: cfg.Train.CrossPlayEvery, Play: func(ctx context.Context, step int) error {
		path, sum, err := LeagueCrossPlay(ctx, CrossPlayOptions{Run: rd.Root(), Endpoint: cfg.Train.CrossPlayEndpoint, UpTo: step, Logger: log.Named("crossplay")})
		if err == nil {
			log.Info("cross-play report", zap.Int("step", step), zap.String("report", path), zap.Int("games", sum.Total), zap.Int("failed", sum.Failed))
		}
		return err
	}}
}
