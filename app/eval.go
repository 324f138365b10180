package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"go.uber.org/zap"
)

// pairwiseDefaults checks the set and fills the games and aspects it
// implies; it returns the set's label in results.
func (fl *PairwiseOptions) defaults(cfg config.Config) (string, error) {
	if fl.Set == "" {
		if spec, ok := rollout.Lookup(cfg.Game.Env); ok && spec.EvalSet != nil {
			fl.Set = spec.EvalSet.Name
		}
	}
	spec, ok := rollout.EvalSetGame(fl.Set)
	if !ok {
		return "", fmt.Errorf("eval pairwise: --set %q: want one of %s", fl.Set, strings.Join(rollout.EvalSetNames(), ", "))
	}
	if fl.LeftGame == "" {
		fl.LeftGame = spec.Name
	}
	if fl.RightGame == "" {
		fl.RightGame = spec.Name
	}
	if len(fl.Aspects) == 0 {
		fl.Aspects = slices.Clone(spec.EvalSet.Aspects)
	}
	for i, name := range fl.Aspects {
		fl.Aspects[i] = normAspect(name)
		if fl.Aspects[i] != reward.AspectCollectiveAgency && fl.Aspects[i] != reward.AspectConflictResolution {
			return "", fmt.Errorf("eval pairwise: --aspect %q: want %s (or %s) or %s", name,
				reward.AspectCollectiveAgency, report.AspectCA, reward.AspectConflictResolution)
		}
	}
	return spec.EvalSet.Label, nil
}

// Pairwise plays both sides on an eval set and judges their final
// completions pairwise in both orders (harness.RunPairwise), printing the
// table and writing the results and details files.
func Pairwise(ctx context.Context, cfg config.Config, env Env, fl PairwiseOptions) error {
	log := env.log()
	setLabel, err := fl.defaults(cfg)
	if err != nil {
		return err
	}
	if cfg.Judge.Kind != reward.JudgeCA {
		return fmt.Errorf("eval pairwise: judge.kind is %q: pairwise comparison needs an LLM judge (judge.kind ca)", cfg.Judge.Kind)
	}
	for _, p := range []string{fl.Out, fl.Details} {
		if err := checkOut(p, fl.Force); err != nil {
			return fmt.Errorf("eval pairwise: %w", err)
		}
	}
	if err := preflightJudge(ctx, cfg, log); err != nil {
		return fmt.Errorf("eval pairwise: %w", err)
	}
	rows, err := evalPrompts(cfg, fl.Set, fl.Data, fl.Prompts)
	if err != nil {
		return err
	}
	decs, err := harness.NewDecodings(fl.Decodings, sampling(cfg))
	if err != nil {
		return err
	}
	sides := newSides(cfg, log)
	defer sides.close()
	l, err := sides.side(ctx, fl.Left, fl.LeftName, fl.LeftGame)
	if err != nil {
		return fmt.Errorf("eval pairwise: --left: %w", err)
	}
	r, err := sides.side(ctx, fl.Right, fl.RightName, fl.RightGame)
	if err != nil {
		return fmt.Errorf("eval pairwise: --right: %w", err)
	}
	if l.Name == r.Name {
		return fmt.Errorf("eval pairwise: both sides are named %q: set --left-name or --right-name", l.Name)
	}
	asp, closeJudge, err := pairwiseJudges(cfg, fl.CacheDir, fl.Aspects, log)
	if err != nil {
		return err
	}
	defer closeJudge()
	bars := env.bars()
	tickR, endR := bars.Start("rollouts", 2*len(rows)*fl.Runs*len(decs))
	tickJ, endJ := bars.Start("comparisons", len(rows)*fl.Runs*len(decs)*len(asp))
	rep, err := harness.RunPairwise(ctx, harness.PairwiseOptions{
		Left: l, Right: r, Prompts: rows, Set: setLabel, Aspects: asp, Decodings: decs,
		Runs: fl.Runs, Seed: cfg.Run.Seed, ChatTemplateKwargs: chatKwargs(cfg),
		Concurrency: cfg.Rollout.Concurrency, JudgeConcurrency: cfg.Judge.Concurrency,
		Logger: log, OnRollout: tickR, OnCompared: tickJ,
	})
	endR(err != nil)
	endJ(err != nil)
	bars.Wait()
	return writePairwise(env, rep, err, fl, log)
}

// pairwiseJudges makes one judge per aspect, sharing one chat client (and
// its cache); the returned func closes it.
func pairwiseJudges(cfg config.Config, cacheDir string, aspects []string, log *zap.Logger) ([]harness.Aspect, func(), error) {
	jc, err := chat.New(judgeClient(cfg, cacheDir, log))
	if err != nil {
		return nil, nil, fmt.Errorf("eval pairwise: config key judge: %w", err)
	}
	var asp []harness.Aspect
	for _, name := range aspects {
		j, err := reward.NewPairwiseJudge(jc, name)
		if err != nil {
			jc.Close()
			return nil, nil, err
		}
		asp = append(asp, harness.Aspect{Name: name, Judge: j})
	}
	return asp, func() { _ = jc.Close() }, nil
}

// writePairwise writes the details (also after a failure), then the table
// and the results file.
func writePairwise(env Env, rep harness.PairwiseReport, runErr error, fl PairwiseOptions, log *zap.Logger) error {
	if fl.Details != "" && len(rep.Comparisons) > 0 {
		if err := harness.WriteJSONL(fl.Details, rep.Comparisons); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if err := harness.WritePairwiseTable(env.out(), rep.Cells); err != nil {
		return err
	}
	if fl.Out != "" {
		if err := writeJSON(fl.Out, rep.Cells); err != nil {
			return err
		}
		log.Info("pairwise results written", zap.String("path", fl.Out))
	}
	return nil
}

// writeJSON writes v as indented JSON to path, creating its directory.
func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return report.WriteJSON(path, v)
}

// normAspect accepts "ca" for collective_agency.
func normAspect(s string) string {
	s = strings.TrimSpace(s)
	if s == report.AspectCA {
		return reward.AspectCollectiveAgency
	}
	return s
}

// evalPrompts loads the prompts of an eval set: --data, else the set's
// default curriculum; the eval split when there is one; n of them drawn
// without repeats when n is positive and smaller than the set.
func evalPrompts(cfg config.Config, set, data string, n int) ([]dataset.Prompt, error) {
	spec, _ := rollout.EvalSetGame(set)
	path := data
	if path == "" {
		path = spec.EvalSet.Curriculum
		if cfg.Game.Env == spec.Name {
			path = cfg.Curriculum.Path
		}
	}
	opts := dataset.LoadOptions{RequirePersonas: spec.Curriculum.RequirePersonas, Categories: spec.Curriculum.Categories, Builtins: rollout.Builtins()}
	if cfg.Curriculum.Personas != "" {
		pairs, err := dataset.LoadPersonaPairs(cfg.Curriculum.Personas)
		if err != nil {
			return nil, fmt.Errorf("config key curriculum.personas: %w", err)
		}
		opts.Personas = pairs
	}
	rows, err := dataset.LoadPrompts(path, opts)
	if err != nil {
		return nil, fmt.Errorf("eval set %s: %w", set, err)
	}
	return harness.SamplePrompts(harness.EvalSplit(rows), n, cfg.Run.Seed), nil
}

// sides builds the sides of a pairwise evaluation, sharing one policy
// client per set of endpoints and closing what it made.
type sides struct {
	cfg     config.Config
	log     *zap.Logger
	clients map[string]*llm.Client
	closers []func()
}

func newSides(cfg config.Config, log *zap.Logger) *sides {
	return &sides{cfg: cfg, log: log, clients: map[string]*llm.Client{}}
}

func (s *sides) close() {
	for _, c := range s.closers {
		c()
	}
	for _, c := range s.clients {
		c.Close()
	}
}

// side builds one side: its policy client, its model (loading the adapter
// when a path is given), its game and its name.
func (s *sides) side(ctx context.Context, spec, name, game string) (harness.Side, error) {
	ss, err := harness.ParseSide(spec)
	if err != nil {
		return harness.Side{}, err
	}
	if _, ok := rollout.Lookup(game); !ok {
		return harness.Side{}, fmt.Errorf("game %q: want one of %s", game, strings.Join(rollout.GameNames(), ", "))
	}
	c := s.cfg
	if ss.Endpoints != nil {
		c.Policy.Endpoints = ss.Endpoints
	}
	key := strings.Join(c.Policy.Endpoints, " ")
	client := s.clients[key]
	if client == nil {
		if client, err = newPolicy(c, s.log); err != nil {
			return harness.Side{}, err
		}
		s.clients[key] = client
	}
	model := ss.Model
	if model == "" {
		model = c.Policy.Model
	}
	if ss.AdapterPath != "" {
		if err := client.LoadLoRA(ctx, ss.Model, ss.AdapterPath); err != nil {
			return harness.Side{}, err
		}
	}
	if name == "" {
		name = ss.Label()
	}
	if err := preflightPolicy(ctx, client, model); err != nil {
		return harness.Side{}, err
	}
	c.Game.Env = game
	g, closeGame, err := newGame(c, s.log)
	if err != nil {
		return harness.Side{}, err
	}
	s.closers = append(s.closers, closeGame)
	return harness.Side{Name: name, Policy: client, Model: model, Game: g}, nil
}

// judgeB is judge B's config: --judge-b-config's, else judge A's again
// (test-retest), with the --judge-b-* flags on top. retest reports that it
// is judge A's unchanged.
func (fl AgreementOptions) judgeB(cfg config.Config) (cfgB config.Config, retest bool, err error) {
	cfgB, retest = cfg, true
	if fl.BConfig != "" {
		if cfgB, err = config.Load(fl.BConfig, nil); err != nil {
			return cfgB, false, fmt.Errorf("eval judge-agreement: --judge-b-config: %w", err)
		}
		retest = false
	}
	for _, o := range []struct {
		v   string
		dst *string
	}{{fl.BModel, &cfgB.Judge.Model}, {fl.BBaseURL, &cfgB.Judge.BaseURL}, {fl.BKeyEnv, &cfgB.Judge.APIKeyEnv}} {
		if o.v != "" && o.v != *o.dst {
			*o.dst, retest = o.v, false
		}
	}
	if err := cfgB.Validate(); err != nil {
		return cfgB, false, fmt.Errorf("eval judge-agreement: judge B: %w", err)
	}
	return cfgB, retest, nil
}

// Agreement judges the rollouts with two judges (or one twice:
// test-retest) and reports their agreement (seed 000 table 7).
func Agreement(ctx context.Context, cfg config.Config, env Env, fl AgreementOptions) error {
	log := env.log()
	if len(fl.Rollouts) == 0 {
		return fmt.Errorf("eval judge-agreement: --rollouts is required")
	}
	cfgB, retest, err := fl.judgeB(cfg)
	if err != nil {
		return err
	}
	var rs []dataset.Rollout
	for _, f := range fl.Rollouts {
		part, err := dataset.ReadAllRollouts(f)
		if err != nil {
			return err
		}
		rs = append(rs, part...)
	}
	ja, closeA, err := newJudge(cfg, "", nil, log)
	if err != nil {
		return fmt.Errorf("eval judge-agreement: judge A: %w", err)
	}
	defer closeA()
	jb, closeB, err := newJudge(cfgB, "", nil, log.Named("b"))
	if err != nil {
		return fmt.Errorf("eval judge-agreement: judge B: %w", err)
	}
	defer closeB()
	label := fl.Label
	if label == "" {
		label = ja.Name() + " vs. " + jb.Name()
		if retest {
			label = ja.Name() + ", test-retest"
		}
	}
	rep, err := harness.RunAgreement(ctx, rs, harness.AgreementOptions{
		JudgeA: ja, JudgeB: jb, Label: label, Levels: fl.Levels, Sample: fl.Sample, Seed: fl.Seed,
		Concurrency: cfg.Judge.Concurrency, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := harness.WriteAgreement(env.out(), rep); err != nil {
		return err
	}
	if fl.Out != "" {
		if err := writeJSON(fl.Out, rep); err != nil {
			return err
		}
		log.Info("agreement written", zap.String("path", fl.Out))
	}
	return nil
}

// PairwiseOptions are `parley eval pairwise`'s settings beside the config.
type PairwiseOptions struct {
	// Left and Right are the sides (harness.ParseSide), LeftName and
	// RightName their names in results (default: their labels), LeftGame
	// and RightGame the games they play (default: the set's game).
	Left, Right, LeftName, RightName, LeftGame, RightGame string
	// Set names a game's evaluation set (default: the configured game's);
	// Data replaces its prompts; Prompts draws that many (0: all).
	Set, Data string
	Prompts   int
	// Out and Details are the results and comparisons files; Force
	// replaces them; CacheDir is a judge cache to reuse.
	Out, Details, CacheDir string
	Force                  bool
	// Runs, Decodings and Aspects: runs per decoding, the decodings
	// (greedy, sampling) and the aspects judged (default: the set's).
	Runs      int
	Decodings []string
	Aspects   []string
}

// AgreementOptions are `parley eval judge-agreement`'s settings beside the
// config (judge A's).
type AgreementOptions struct {
	// BConfig is the config whose judge is judge B (default: judge A's
	// again), with BModel, BBaseURL and BKeyEnv on top.
	BConfig, BModel, BBaseURL, BKeyEnv string
	// Rollouts are the rollouts files judged; Sample judges that many,
	// balanced by score level (0: all), drawn with Seed; Levels is the
	// score scale's top.
	Rollouts []string
	Sample   int
	Levels   int
	Seed     int64
	// Label names the pair in results; Out is the results file.
	Label, Out string
}
