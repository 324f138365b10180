package main

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
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// newEvalCmd is `parley eval`: pairwise comparisons and judge agreement.
func newEvalCmd(a *cli) *cobra.Command {
	cmd := &cobra.Command{Use: "eval", Short: "Evaluate models: pairwise win rates (seed 000 tables 2-3) and judge agreement (table 7)"}
	cmd.AddCommand(newEvalPairwiseCmd(a), newEvalAgreementCmd(a))
	return cmd
}

// pairwiseLong is eval pairwise's help.
const pairwiseLong = `Both sides play the same prompts (GroupSize 1) under each decoding (greedy:
temperature 0; sampling: the config's sampling) for --runs seeded runs; the
config's judge compares the two final completions in both orders for each
aspect. The left win rate (a tie counts half) is reported as mean ± SD over
runs with each side's mean rounds of negotiation.

A SIDE is one of:
  base                   the config's endpoints and policy.model
  adapter:NAME           the config's endpoints, LoRA adapter NAME (already loaded)
  adapter:NAME=PATH      the same, loading the adapter from PATH (as the server sees it) first
  http://host:8000       that endpoint, policy.model
  http://host:8000#NAME  that endpoint, model or adapter NAME

--set names a game's held-out evaluation set (default: the configured
game's). Set conflict is the deliberation game's: the dilemma curriculum
(the config's when game.env is deliberation, else builtin:dilemmas; its eval
split when it has one); set open-ended is the single-agent game's: open-ended
questions (the config's when game.env is single, else builtin:open-ended).
--data replaces either. By default a side plays the set's game;
--left-game/--right-game single lets a single agent answer the dilemmas
directly (Multi-Agent vs. Single-Agent).`

// pairwiseFlags are eval pairwise's flags.
type pairwiseFlags struct {
	path, left, right, leftName, rightName, leftGame, rightGame string
	set, data, out, details, cacheDir                           string
	runs, prompts                                               int
	decodings, aspects                                          []string
	force                                                       bool
}

func newEvalPairwiseCmd(a *cli) *cobra.Command {
	var fl pairwiseFlags
	cmd := &cobra.Command{
		Use:   "pairwise --config F --left SIDE --right SIDE --set conflict|open-ended",
		Short: "Win rate of a left model against a right model, judged pairwise in both orders",
		Long:  pairwiseLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, fl.path)
			if err != nil {
				return err
			}
			return runPairwise(cmd, a, cfg, fl, log)
		},
	}
	configFlags(cmd, &fl.path)
	f := cmd.Flags()
	f.StringVar(&fl.left, "left", "", "left side: base, adapter:NAME[=PATH], URL or URL#NAME (required)")
	f.StringVar(&fl.right, "right", "", "right side, as --left (required)")
	f.StringVar(&fl.leftName, "left-name", "", "left side's name in results (default: the adapter or model name, or base)")
	f.StringVar(&fl.rightName, "right-name", "", "right side's name in results")
	f.StringVar(&fl.leftGame, "left-game", "", "game the left side plays: deliberation or single (default: deliberation for --set conflict, single for open-ended)")
	f.StringVar(&fl.rightGame, "right-game", "", "game the right side plays, as --left-game")
	f.StringVar(&fl.set, "set", "", "eval set: a game's held-out set ("+strings.Join(rollout.EvalSetNames(), ", ")+"); default the configured game's")
	f.StringVar(&fl.data, "data", "", "prompts file replacing the set's default curriculum")
	f.IntVar(&fl.runs, "runs", 3, "seeded runs per decoding")
	f.StringSliceVar(&fl.decodings, "decoding", []string{report.DecodingGreedy, report.DecodingSampling}, "decodings: greedy, sampling")
	f.StringSliceVar(&fl.aspects, "aspect", nil, "judged aspects: collective_agency (ca), conflict_resolution (default: both for --set conflict, collective_agency for open-ended)")
	f.IntVar(&fl.prompts, "prompts", 0, "number of prompts to draw (0: every prompt of the set)")
	f.StringVar(&fl.out, "out", "", "write the results (report.PairwiseResult objects) to this JSON file")
	f.StringVar(&fl.details, "details", "", "write every comparison (finals, verdicts, rationales) to this JSONL file")
	f.StringVar(&fl.cacheDir, "judge-cache", "", "directory of a judge cache to reuse verdicts across invocations (default: none)")
	f.BoolVar(&fl.force, "force", false, "replace the --out and --details files when they exist")
	_ = cmd.MarkFlagRequired("left")
	_ = cmd.MarkFlagRequired("right")
	return cmd
}

// pairwiseDefaults checks the set and fills the games and aspects it
// implies; it returns the set's label in results.
func (fl *pairwiseFlags) defaults(cfg config.Config) (string, error) {
	if fl.set == "" {
		if spec, ok := rollout.Lookup(cfg.Game.Env); ok && spec.EvalSet != nil {
			fl.set = spec.EvalSet.Name
		}
	}
	spec, ok := rollout.EvalSetGame(fl.set)
	if !ok {
		return "", fmt.Errorf("eval pairwise: --set %q: want one of %s", fl.set, strings.Join(rollout.EvalSetNames(), ", "))
	}
	if fl.leftGame == "" {
		fl.leftGame = spec.Name
	}
	if fl.rightGame == "" {
		fl.rightGame = spec.Name
	}
	if len(fl.aspects) == 0 {
		fl.aspects = slices.Clone(spec.EvalSet.Aspects)
	}
	for i, name := range fl.aspects {
		fl.aspects[i] = normAspect(name)
		if fl.aspects[i] != reward.AspectCollectiveAgency && fl.aspects[i] != reward.AspectConflictResolution {
			return "", fmt.Errorf("eval pairwise: --aspect %q: want %s (or %s) or %s", name,
				reward.AspectCollectiveAgency, report.AspectCA, reward.AspectConflictResolution)
		}
	}
	return spec.EvalSet.Label, nil
}

// runPairwise builds the sides and judges the config and flags describe
// and runs harness.RunPairwise.
func runPairwise(cmd *cobra.Command, a *cli, cfg config.Config, fl pairwiseFlags, log *zap.Logger) error {
	ctx := cmd.Context()
	setLabel, err := fl.defaults(cfg)
	if err != nil {
		return err
	}
	if cfg.Judge.Kind != reward.JudgeCA {
		return fmt.Errorf("eval pairwise: judge.kind is %q: pairwise comparison needs an LLM judge (judge.kind ca)", cfg.Judge.Kind)
	}
	for _, p := range []string{fl.out, fl.details} {
		if err := checkOut(p, fl.force); err != nil {
			return fmt.Errorf("eval pairwise: %w", err)
		}
	}
	if err := preflightJudge(ctx, cfg, log); err != nil {
		return fmt.Errorf("eval pairwise: %w", err)
	}
	rows, err := evalPrompts(cfg, fl.set, fl.data, fl.prompts)
	if err != nil {
		return err
	}
	decs, err := harness.NewDecodings(fl.decodings, sampling(cfg))
	if err != nil {
		return err
	}
	sides := newSides(cfg, log)
	defer sides.close()
	l, err := sides.side(ctx, fl.left, fl.leftName, fl.leftGame)
	if err != nil {
		return fmt.Errorf("eval pairwise: --left: %w", err)
	}
	r, err := sides.side(ctx, fl.right, fl.rightName, fl.rightGame)
	if err != nil {
		return fmt.Errorf("eval pairwise: --right: %w", err)
	}
	if l.Name == r.Name {
		return fmt.Errorf("eval pairwise: both sides are named %q: set --left-name or --right-name", l.Name)
	}
	asp, closeJudge, err := pairwiseJudges(cfg, fl.cacheDir, fl.aspects, log)
	if err != nil {
		return err
	}
	defer closeJudge()
	bars := a.bars()
	tickR, endR := bars.Start("rollouts", 2*len(rows)*fl.runs*len(decs))
	tickJ, endJ := bars.Start("comparisons", len(rows)*fl.runs*len(decs)*len(asp))
	rep, err := harness.RunPairwise(ctx, harness.PairwiseOptions{
		Left: l, Right: r, Prompts: rows, Set: setLabel, Aspects: asp, Decodings: decs,
		Runs: fl.runs, Seed: cfg.Run.Seed, ChatTemplateKwargs: chatKwargs(cfg),
		Concurrency: cfg.Rollout.Concurrency, JudgeConcurrency: cfg.Judge.Concurrency,
		Logger: log, OnRollout: tickR, OnCompared: tickJ,
	})
	endR(err != nil)
	endJ(err != nil)
	bars.Wait()
	return writePairwise(cmd, rep, err, fl, log)
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
func writePairwise(cmd *cobra.Command, rep harness.PairwiseReport, runErr error, fl pairwiseFlags, log *zap.Logger) error {
	if fl.details != "" && len(rep.Comparisons) > 0 {
		if err := harness.WriteJSONL(fl.details, rep.Comparisons); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if err := harness.WritePairwiseTable(cmd.OutOrStdout(), rep.Cells); err != nil {
		return err
	}
	if fl.out != "" {
		if err := writeJSON(fl.out, rep.Cells); err != nil {
			return err
		}
		log.Info("pairwise results written", zap.String("path", fl.out))
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
	opts := dataset.LoadOptions{RequirePersonas: spec.Curriculum.RequirePersonas, Categories: spec.Curriculum.Categories}
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

// agreementLong is eval judge-agreement's help.
const agreementLong = `Judge A is the config's judge (override its keys with --judge.model=... and
the like). Judge B is the judge of --judge-b-config, else judge A's
configuration again (test-retest), with --judge-b-model, --judge-b-base-url
and --judge-b-api-key-env applied on top. No judge cache is used, so every
verdict is asked for. Failed rollouts are skipped; a rollout either judge
fails to score is excluded and counted. Prints exact and ±1 agreement,
Pearson r, quadratic-weighted kappa and the confusion matrix (seed 000
table 7); --out writes them as JSON that parley report reads.`

// agreementFlags are eval judge-agreement's flags.
type agreementFlags struct {
	path, bPath, bModel, bBaseURL, bKeyEnv, label, out string
	rolloutFiles                                       []string
	sample, levels                                     int
	seed                                               int64
}

func newEvalAgreementCmd(a *cli) *cobra.Command {
	var fl agreementFlags
	cmd := &cobra.Command{
		Use:   "judge-agreement --config F --rollouts R.parquet [--judge-b-config G | --judge-b-model M ...]",
		Short: "Agreement of two judges (or one judge twice: test-retest) on the same rollouts' final completions",
		Long:  agreementLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, fl.path)
			if err != nil {
				return err
			}
			if len(fl.rolloutFiles) == 0 {
				return fmt.Errorf("eval judge-agreement: --rollouts is required")
			}
			if !cmd.Flags().Changed("seed") {
				fl.seed = cfg.Run.Seed
			}
			return runAgreement(cmd, cfg, fl, log)
		},
	}
	configFlags(cmd, &fl.path)
	f := cmd.Flags()
	f.StringSliceVar(&fl.rolloutFiles, "rollouts", nil, "rollouts parquet file(s) (rollouts/step-N.parquet, parley rollout's rollouts.parquet)")
	f.StringVar(&fl.bPath, "judge-b-config", "", "config file whose judge section is judge B (default: judge A's again)")
	f.StringVar(&fl.bModel, "judge-b-model", "", "judge B's model")
	f.StringVar(&fl.bBaseURL, "judge-b-base-url", "", "judge B's OpenAI-compatible base URL")
	f.StringVar(&fl.bKeyEnv, "judge-b-api-key-env", "", "environment variable holding judge B's API key")
	f.IntVar(&fl.sample, "sample", 0, "judge a sample of N rollouts balanced by score level (the stored scores, else judge A's); 0: all")
	f.Int64Var(&fl.seed, "seed", 0, "seed of the sample (default: run.seed)")
	f.IntVar(&fl.levels, "levels", harness.DefaultLevels, "score levels: scores must be integers in 1..levels")
	f.StringVar(&fl.label, "label", "", "name of the pair in results (default: the judge models)")
	f.StringVar(&fl.out, "out", "", "write the result (report.AgreementResult with the confusion matrix and items) to this JSON file")
	return cmd
}

// judgeB is judge B's config: --judge-b-config's, else judge A's again
// (test-retest), with the --judge-b-* flags on top. retest reports that it
// is judge A's unchanged.
func (fl agreementFlags) judgeB(cfg config.Config) (cfgB config.Config, retest bool, err error) {
	cfgB, retest = cfg, true
	if fl.bPath != "" {
		if cfgB, err = config.Load(fl.bPath, nil); err != nil {
			return cfgB, false, fmt.Errorf("eval judge-agreement: --judge-b-config: %w", err)
		}
		retest = false
	}
	for _, o := range []struct {
		v   string
		dst *string
	}{{fl.bModel, &cfgB.Judge.Model}, {fl.bBaseURL, &cfgB.Judge.BaseURL}, {fl.bKeyEnv, &cfgB.Judge.APIKeyEnv}} {
		if o.v != "" && o.v != *o.dst {
			*o.dst, retest = o.v, false
		}
	}
	if err := cfgB.Validate(); err != nil {
		return cfgB, false, fmt.Errorf("eval judge-agreement: judge B: %w", err)
	}
	return cfgB, retest, nil
}

// runAgreement judges the rollouts with both judges and reports.
func runAgreement(cmd *cobra.Command, cfg config.Config, fl agreementFlags, log *zap.Logger) error {
	cfgB, retest, err := fl.judgeB(cfg)
	if err != nil {
		return err
	}
	var rs []dataset.Rollout
	for _, f := range fl.rolloutFiles {
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
	label := fl.label
	if label == "" {
		label = ja.Name() + " vs. " + jb.Name()
		if retest {
			label = ja.Name() + ", test-retest"
		}
	}
	rep, err := harness.RunAgreement(cmd.Context(), rs, harness.AgreementOptions{
		JudgeA: ja, JudgeB: jb, Label: label, Levels: fl.levels, Sample: fl.sample, Seed: fl.seed,
		Concurrency: cfg.Judge.Concurrency, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := harness.WriteAgreement(cmd.OutOrStdout(), rep); err != nil {
		return err
	}
	if fl.out != "" {
		if err := writeJSON(fl.out, rep); err != nil {
			return err
		}
		log.Info("agreement written", zap.String("path", fl.out))
	}
	return nil
}
