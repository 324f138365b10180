package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// secretFromEnv reads the secret named by the config key's env var; an
// empty name means no secret.
func secretFromEnv(key, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return "", fmt.Errorf("config key %s names the environment variable %s, which is not set", key, name)
	}
	return v, nil
}

func newPolicy(cfg config.Config, log *zap.Logger) (*llm.Client, error) {
	key, err := secretFromEnv("policy.api_key_env", cfg.Policy.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	c, err := newTokens(cfg.Policy.Endpoints, key, 0, policyConnection(cfg), log.Named("policy"))
	if err != nil {
		return nil, fmt.Errorf("config key policy.endpoints: %w", err)
	}
	return c, nil
}

// sampling is the rollout sampling. top_k 0 (off) is sent as -1: a request
// that leaves a field out gets vLLM's --generation-config defaults (top_k 20
// for Qwen3), and the trainer's ratio assumes the full softmax.
func sampling(cfg config.Config) llm.Sampling {
	topK := cfg.Sampling.TopK
	if topK == 0 {
		topK = -1
	}
	return llm.Sampling{
		MaxTokens:   cfg.Sampling.MaxTokens,
		Temperature: cfg.Sampling.Temperature,
		TopP:        cfg.Sampling.TopP,
		TopK:        topK,
	}
}

func chatKwargs(cfg config.Config) map[string]any {
	return map[string]any{"enable_thinking": cfg.Policy.EnableThinking}
}

// newGame builds the configured game from its registry entry and section;
// a game that consults the judge during play gets its chat client, which
// the returned func closes.
func newGame(cfg config.Config, log *zap.Logger) (rollout.Game, func(), error) {
	shared := rollout.Shared{TurnTokens: cfg.Sampling.MaxTokens, FinalTokens: cfg.Sampling.FinalMaxTokens}
	done := func() {}
	if spec, ok := rollout.Lookup(cfg.Game.Env); ok && spec.UsesJudge {
		c, err := chat.New(judgeClient(cfg, "", log))
		if err != nil {
			return nil, nil, fmt.Errorf("config key judge: %w", err)
		}
		shared.Judge, done = c, func() { _ = c.Close() }
	}
	g, err := rollout.NewGame(cfg.Game.Env, cfg.Game.Active(), shared)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("config key game: %w", err)
	}
	return g, done, nil
}

// LoadCurriculum loads the configured prompts (and persona library), keeps
// the configured split, and checks them for the configured game.
func LoadCurriculum(cfg config.Config) ([]dataset.Prompt, error) {
	return loadSplit(cfg, cfg.Curriculum.Split)
}

// loadSplit loads the configured curriculum's prompts of split ("": all).
func loadSplit(cfg config.Config, split string) ([]dataset.Prompt, error) {
	spec, _ := rollout.Lookup(cfg.Game.Env)
	opts, err := loadOptions(cfg, spec)
	if err != nil {
		return nil, err
	}
	prompts, err := dataset.LoadPrompts(cfg.Curriculum.Path, opts)
	if err != nil {
		return nil, fmt.Errorf("config key curriculum.path: %w", err)
	}
	prompts = dataset.SelectSplit(prompts, split)
	if len(prompts) == 0 {
		return nil, fmt.Errorf("config key curriculum.split: no prompt of %s is in split %q", cfg.Curriculum.Path, split)
	}
	return prompts, nil
}

// loadOptions are the options to load rows of game spec with: the game's
// (rollout.Spec.LoadOptions) and the configured persona library.
func loadOptions(cfg config.Config, spec rollout.Spec) (dataset.LoadOptions, error) {
	opts := spec.LoadOptions()
	if cfg.Curriculum.Personas != "" {
		pairs, err := dataset.LoadPersonaPairs(cfg.Curriculum.Personas)
		if err != nil {
			return opts, fmt.Errorf("config key curriculum.personas: %w", err)
		}
		opts.Personas = pairs
	}
	return opts, nil
}

// newJudge builds the configured reward judge; cacheDir holds the judge
// cache ("" for none). The returned func releases it. Its switch is the
// one place judge kinds are compared: what else a kind does is its entry
// in reward's kind table (reward.JudgeKind).
func newJudge(cfg config.Config, cacheDir string, observe func(time.Duration, error), log *zap.Logger) (reward.Judge, func(), error) {
	switch cfg.Judge.Kind {
	case reward.JudgeGame:
		spec, _ := rollout.Lookup(cfg.Game.Env)
		j, err := spec.Scorer(cfg.Game.Active())
		if err != nil {
			return nil, nil, fmt.Errorf("config key judge.kind: the %s game's scorer: %w", cfg.Game.Env, err)
		}
		return j, func() {}, nil
	case reward.JudgeRule:
		j, err := reward.NewRuleJudge(reward.RuleOptions{
			Kind:            cfg.Judge.Rule.Kind,
			Keywords:        cfg.Judge.Rule.Keywords,
			TargetLength:    cfg.Judge.Rule.TargetLength,
			TargetWord:      cfg.Judge.Rule.TargetWord,
			AgreementWeight: cfg.Judge.Rule.AgreementWeight,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("config key judge.rule: %w", err)
		}
		return j, func() {}, nil
	case reward.JudgeCA:
		opts := judgeClient(cfg, cacheDir, log)
		opts.Observe = observe
		c, err := chat.New(opts)
		if err != nil {
			return nil, nil, fmt.Errorf("config key judge: %w", err)
		}
		if cfg.Judge.Mode == reward.ModeGroup {
			g := reward.NewCAGroupJudge(c, reward.GroupOptions{Seed: cfg.Run.Seed, PositionCheck: cfg.Judge.PositionCheck,
				RationaleMaxChars: cfg.Judge.RationaleMaxChars})
			return g, func() { _ = c.Close() }, nil
		}
		return reward.NewCAJudge(c).WithRationaleMaxChars(cfg.Judge.RationaleMaxChars), func() { _ = c.Close() }, nil
	case reward.JudgePython:
		p := cfg.Judge.Python
		j, err := reward.NewPythonJudge(reward.PythonOptions{
			Python: benchPython(p.Interpreter), Function: p.Function, Path: slices.Clone(p.Path),
			BatchSize: p.BatchSize, Timeout: p.Timeout, Min: p.Min, Max: p.Max, Withhold: secretVars(cfg), Logger: log,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("config key judge.python: %w", err)
		}
		return j, func() { _ = j.Close() }, nil
	}
	return nil, nil, fmt.Errorf("config key judge.kind: unknown kind %q (want one of %v)", cfg.Judge.Kind, reward.JudgeKinds)
}

// newAuditJudge is the audit judge of parley train (judge.audit), nil when
// none is configured: a Collective Agency rubric judge on its own
// endpoint, never checked before the run (its being down must not stop
// training: its failures are counted and warned).
func newAuditJudge(cfg config.Config, log *zap.Logger) (reward.Judge, func(), error) {
	a := cfg.Judge.Audit
	if !a.On() {
		return nil, func() {}, nil
	}
	// Its retries are not warned one by one: the audit warns once per
	// cause of failure (train.AuditOptions).
	quiet := log.WithOptions(zap.IncreaseLevel(zapcore.ErrorLevel))
	c, err := chat.New(chatOptions("judge.audit", a.ChatEndpoint, apiKey("judge.audit", a.APIKeyEnv, log), quiet))
	if err != nil {
		return nil, nil, fmt.Errorf("config key judge.audit: %w", err)
	}
	return reward.NewCAJudge(c), func() { _ = c.Close() }, nil
}

// judgeClient is the judge API configuration; the key is read from the
// environment variable the config names.
func judgeClient(cfg config.Config, cacheDir string, log *zap.Logger) chat.Options {
	o := chatOptions("judge", cfg.Judge.ChatEndpoint, apiKey("judge", cfg.Judge.APIKeyEnv, log), log)
	o.CacheDir = cacheDir
	return o
}

// unsetKeys holds the API key variables found unset ("judge\x00VAR"), so
// that a command building several clients of one server (the reward judge,
// a game's judge, each side's game in eval pairwise) warns once.
var unsetKeys sync.Map

// apiKey reads the API key of who (judge, generator) from the environment
// variable the config names (none: no key), warning once per process when
// it is not set.
func apiKey(who, variable string, log *zap.Logger) string {
	if variable == "" {
		return ""
	}
	key := os.Getenv(variable)
	if key == "" {
		if _, warned := unsetKeys.LoadOrStore(who+"\x00"+variable, true); !warned {
			log.Warn("the "+who+"'s API key variable is not set; sending no key", zap.String("variable", variable))
		}
	}
	return key
}

// retryPolicy is the default retry policy with a config's max_retries (0:
// a single attempt).
func retryPolicy(maxRetries int) retry.Policy { return retry.Count(retry.Default, maxRetries) }

// runnerOptions is the rollout runner the config describes (its game and
// the players of roles.*); the training loop sets the step, policy version
// and adapter per step. The returned func closes the players' clients.
func runnerOptions(cfg config.Config, policy *llm.Client, log *zap.Logger) (rollout.RunnerOptions, func(), error) {
	game, closeGame, err := newGame(cfg, log)
	if err != nil {
		return rollout.RunnerOptions{}, nil, err
	}
	players, pools, closePlayers, err := newPlayers(cfg, policy, log)
	if err != nil {
		closeGame()
		return rollout.RunnerOptions{}, nil, err
	}
	return rollout.RunnerOptions{
		Game: game, Policy: policy, Model: cfg.Policy.Model, Players: players, Pools: pools,
		Sampling: sampling(cfg), ChatTemplateKwargs: chatKwargs(cfg),
		GroupSize: cfg.Rollout.GroupSize, Concurrency: cfg.Rollout.Concurrency,
		Seed: cfg.Run.Seed, RunID: cfg.Run.Name, Logger: log,
		History: rollout.HistoryMode(cfg.Rollout.History),
	}, func() { closePlayers(); closeGame() }, nil
}

// newPlayers builds what plays each role of roles.* (config.Config.RoleSeat):
// the base model or an adapter on the policy's endpoints, another vLLM
// server, an external chat model, the game's own script, or (policy pool)
// a pool of these drawn per group. Adapters named with adapter_path are
// loaded now. The returned func closes the clients it made.
func newPlayers(cfg config.Config, policy *llm.Client, log *zap.Logger) (map[string]rollout.Player, map[string][]rollout.Player, func(), error) {
	players := map[string]rollout.Player{}
	pools := map[string][]rollout.Player{}
	b := newSeats(policy, cfg.Policy.Model, policyConnection(cfg), false, log)
	for role, r := range cfg.Roles {
		key := "roles." + role
		if r.Policy == dataset.PolicyTrained {
			continue
		}
		members, mkeys := []config.RoleModel{r}, []string{key}
		pooled := r.Policy == dataset.PolicyPool || (r.Policy == dataset.PolicyLeague && len(r.Pool) > 0)
		if r.Policy == dataset.PolicyLeague && len(r.Pool) == 0 {
			// Outside training a league without frozen agents is the base
			// model; training draws its snapshots (leagueRoles).
			members = []config.RoleModel{{Policy: dataset.PolicyBase}}
		}
		if pooled {
			members, mkeys = r.Pool, nil
			for i := range r.Pool {
				mkeys = append(mkeys, fmt.Sprintf("%s.pool[%d]", key, i))
			}
		}
		for i, m := range members {
			sp, err := b.build(cfg.RoleSeat(role, mkeys[i], m))
			if err == nil && sp.load != nil {
				if err = sp.load(context.Background()); err != nil {
					err = fmt.Errorf("config key %s.adapter_path: %w", mkeys[i], err)
				}
			}
			if err != nil {
				b.close()
				return nil, nil, nil, err
			}
			if pooled {
				pools[role] = append(pools[role], sp.player)
			} else {
				players[role] = sp.player
			}
		}
	}
	return players, pools, b.close, nil
}

// leagueRoles are the training loop's leagues (roles.<role>.policy:
// league): each role's options and its frozen members, the players built
// from roles.<role>.pool (ro.Pools).
func leagueRoles(cfg config.Config, ro rollout.RunnerOptions) map[string]train.LeagueRole {
	out := map[string]train.LeagueRole{}
	for role, r := range cfg.Roles {
		if r.Policy != dataset.PolicyLeague {
			continue
		}
		out[role] = train.LeagueRole{
			Options: league.Options{SnapshotEvery: r.League.SnapshotEvery, Draw: r.League.Draw, PFSPPower: r.League.PFSPPower, MaxLoaded: r.League.MaxLoaded},
			Frozen:  ro.Pools[role],
		}
	}
	return out
}

// dynamicSampling reports whether the loop samples dynamically
// (train.dynamic_sampling): asked for, and where it applies (series
// training and league roles only on the stream). When asked for but not
// applicable it logs why it is off.
func dynamicSampling(cfg config.Config, league map[string]train.LeagueRole, series *train.SeriesOptions, stream bool, log *zap.Logger) bool {
	if !cfg.Train.DynamicSampling {
		return false
	}
	var why string
	switch {
	case cfg.GRPO.Advantage == grpo.ModeRoleBaseline:
		why = "grpo.advantage role_baseline gives groups of equal rewards an advantage"
	case cfg.GRPO.KeepZeroVariance:
		why = "grpo.keep_zero_variance trains groups of equal rewards"
	case series != nil && !stream:
		why = "series training plays each series' next game, no rows to draw"
	case len(league) > 0 && !stream:
		why = "league roles are drawn per step before sampling"
	default:
		return true
	}
	log.Info("train.dynamic_sampling is off for this run: "+why, zap.String("key", "train.dynamic_sampling"))
	return false
}

// streaming reports whether the loop streams its groups
// (train.sampling: stream with max_staleness ≥ 1) and logs why not when
// the config asks for it but the run cannot.
func streaming(cfg config.Config, log *zap.Logger) bool {
	if cfg.Train.Sampling != config.SamplingStream || cfg.Train.MaxStaleness < 1 {
		return false
	}
	if cfg.Trainer.FullFinetune && cfg.Train.WeightSync.PauseMode == "abort" {
		log.Info("train.sampling: this run samples step by step: train.weight_sync.pause_mode abort would fail the dialogues in flight at every update (use wait or keep)",
			zap.String("key", "train.sampling"))
		return false
	}
	return true
}

// streamConcurrency is rollout.concurrency for a streaming run: at most
// twice what the policy's endpoints hold (their count times
// policy.max_concurrent_per_endpoint, when they are listed), with a
// warning when it is clamped. Twice keeps a request ready for every slot
// while other dialogues are between their turns; more only queues at the
// client and ages the groups.
func streamConcurrency(cfg config.Config, log *zap.Logger) int {
	n := cfg.Rollout.Concurrency
	for _, e := range cfg.Policy.Endpoints {
		if strings.HasPrefix(e, "dns+") {
			return n // the endpoints are discovered: their count is not known here
		}
	}
	if hold := 2 * len(cfg.Policy.Endpoints) * cfg.Policy.MaxConcurrentPerEndpoint; hold > 0 && n > hold {
		log.Warn("rollout.concurrency is more than twice what the policy's endpoints hold (len(policy.endpoints) × policy.max_concurrent_per_endpoint): clamped",
			zap.String("key", "rollout.concurrency"), zap.Int("configured", n), zap.Int("clamped_to", hold))
		return hold
	}
	return n
}

// advantageOptions maps the config's grpo section.
func advantageOptions(g config.GRPO) grpo.AdvantageOptions {
	return grpo.AdvantageOptions{Mode: g.Advantage, Epsilon: g.Epsilon, KeepZeroVariance: g.KeepZeroVariance, BaselineMomentum: g.BaselineMomentum}
}
