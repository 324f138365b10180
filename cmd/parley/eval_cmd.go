package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
func newEvalCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "eval", Short: "Evaluate models: pairwise win rates (seed 000 tables 2-3) and judge agreement (table 7)"}
	cmd.AddCommand(newEvalPairwiseCmd(a), newEvalAgreementCmd(a))
	return cmd
}

// Eval sets on the command line.
const (
	setConflict  = "conflict"
	setOpenEnded = "open-ended"
)

func newEvalPairwiseCmd(a *app) *cobra.Command {
	var (
		path, left, right, leftName, rightName, leftGame, rightGame string
		set, data, out, details, cacheDir                           string
		runs, prompts                                               int
		decodings, aspects                                          []string
	)
	cmd := &cobra.Command{
		Use:   "pairwise --config F --left SIDE --right SIDE --set conflict|open-ended",
		Short: "Win rate of a left model against a right model, judged pairwise in both orders",
		Long: `Both sides play the same prompts (GroupSize 1) under each decoding (greedy:
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

Set conflict plays the dilemma curriculum (the config's when game.env is
deliberation, else builtin:dilemmas; its eval split when it has one); set
open-ended plays open-ended questions (the config's when game.env is single,
else builtin:open-ended). --data replaces either. By default a side plays
the deliberation game on the conflict set and the single-agent game on the
open-ended set; --left-game/--right-game single lets a single agent answer
the dilemmas directly (Multi-Agent vs. Single-Agent).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			defaultGame, setLabel := "deliberation", harness.SetConflict
			switch set {
			case setConflict:
			case setOpenEnded:
				defaultGame, setLabel = "single", harness.SetOpenEnded
			default:
				return fmt.Errorf("eval pairwise: --set %q: want %s or %s", set, setConflict, setOpenEnded)
			}
			if leftGame == "" {
				leftGame = defaultGame
			}
			if rightGame == "" {
				rightGame = defaultGame
			}
			if len(aspects) == 0 {
				aspects = []string{reward.AspectCollectiveAgency}
				if set == setConflict {
					aspects = append(aspects, reward.AspectConflictResolution)
				}
			}
			for i, name := range aspects {
				aspects[i] = normAspect(name)
				if aspects[i] != reward.AspectCollectiveAgency && aspects[i] != reward.AspectConflictResolution {
					return fmt.Errorf("eval pairwise: --aspect %q: want %s (or %s) or %s", name,
						reward.AspectCollectiveAgency, report.AspectCA, reward.AspectConflictResolution)
				}
			}
			if cfg.Judge.Kind != "ca" {
				return fmt.Errorf("eval pairwise: judge.kind is %q: pairwise comparison needs an LLM judge (judge.kind ca)", cfg.Judge.Kind)
			}
			rows, err := evalPrompts(cfg, set, data, prompts)
			if err != nil {
				return err
			}
			decs, err := harness.NewDecodings(decodings, sampling(cfg))
			if err != nil {
				return err
			}
			clients := map[string]*llm.Client{}
			defer func() {
				for _, c := range clients {
					c.Close()
				}
			}()
			l, err := evalSide(ctx, cfg, log, clients, left, leftName, leftGame)
			if err != nil {
				return fmt.Errorf("eval pairwise: --left: %w", err)
			}
			r, err := evalSide(ctx, cfg, log, clients, right, rightName, rightGame)
			if err != nil {
				return fmt.Errorf("eval pairwise: --right: %w", err)
			}
			if l.Name == r.Name {
				return fmt.Errorf("eval pairwise: both sides are named %q: set --left-name or --right-name", l.Name)
			}
			jc, err := chat.New(judgeClient(cfg, cacheDir, log))
			if err != nil {
				return fmt.Errorf("eval pairwise: config key judge: %w", err)
			}
			defer jc.Close()
			var asp []harness.Aspect
			for _, name := range aspects {
				j, err := reward.NewPairwiseJudge(jc, name)
				if err != nil {
					return err
				}
				asp = append(asp, harness.Aspect{Name: name, Judge: j})
			}

			bars := a.bars()
			rb := bars.Add("rollouts", int64(2*len(rows)*runs*len(decs)))
			jb := bars.Add("comparisons", int64(len(rows)*runs*len(decs)*len(asp)))
			rep, runErr := harness.RunPairwise(ctx, harness.PairwiseOptions{
				Left: l, Right: r, Prompts: rows, Set: setLabel, Aspects: asp, Decodings: decs,
				Runs: runs, Seed: cfg.Run.Seed, ChatTemplateKwargs: chatKwargs(cfg),
				Concurrency: cfg.Rollout.Concurrency, JudgeConcurrency: cfg.Judge.Concurrency,
				Logger: log, OnRollout: rb.Increment, OnCompared: jb.Increment,
			})
			if runErr != nil {
				rb.Abort()
				jb.Abort()
			}
			bars.Wait()
			if details != "" && len(rep.Comparisons) > 0 {
				if err := harness.WriteJSONL(details, rep.Comparisons); err != nil {
					return err
				}
			}
			if runErr != nil {
				return runErr
			}
			if err := harness.WritePairwiseTable(cmd.OutOrStdout(), rep.Cells); err != nil {
				return err
			}
			if out != "" {
				if err := writeJSON(out, rep.Cells); err != nil {
					return err
				}
				log.Info("pairwise results written", zap.String("path", out))
			}
			return nil
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.StringVar(&left, "left", "", "left side: base, adapter:NAME[=PATH], URL or URL#NAME (required)")
	f.StringVar(&right, "right", "", "right side, as --left (required)")
	f.StringVar(&leftName, "left-name", "", "left side's name in results (default: the adapter or model name, or base)")
	f.StringVar(&rightName, "right-name", "", "right side's name in results")
	f.StringVar(&leftGame, "left-game", "", "game the left side plays: deliberation or single (default: deliberation for --set conflict, single for open-ended)")
	f.StringVar(&rightGame, "right-game", "", "game the right side plays, as --left-game")
	f.StringVar(&set, "set", setConflict, "eval set: conflict or open-ended")
	f.StringVar(&data, "data", "", "prompts file replacing the set's default curriculum")
	f.IntVar(&runs, "runs", 3, "seeded runs per decoding")
	f.StringSliceVar(&decodings, "decoding", []string{report.DecodingGreedy, report.DecodingSampling}, "decodings: greedy, sampling")
	f.StringSliceVar(&aspects, "aspect", nil, "judged aspects: collective_agency (ca), conflict_resolution (default: both for --set conflict, collective_agency for open-ended)")
	f.IntVar(&prompts, "prompts", 0, "number of prompts to draw (0: every prompt of the set)")
	f.StringVar(&out, "out", "", "write the results (report.PairwiseResult objects) to this JSON file")
	f.StringVar(&details, "details", "", "write every comparison (finals, verdicts, rationales) to this JSONL file")
	f.StringVar(&cacheDir, "judge-cache", "", "directory of a judge cache to reuse verdicts across invocations (default: none)")
	_ = cmd.MarkFlagRequired("left")
	_ = cmd.MarkFlagRequired("right")
	return cmd
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
	path := data
	if path == "" {
		switch {
		case set == setConflict && cfg.Game.Env == "deliberation", set == setOpenEnded && cfg.Game.Env == "single":
			path = cfg.Curriculum.Path
		case set == setConflict:
			path = dataset.BuiltinPrefix + dataset.SampleDilemmas
		default:
			path = dataset.BuiltinPrefix + dataset.SampleOpenEnded
		}
	}
	opts := dataset.LoadOptions{RequirePersonas: set == setConflict}
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

// evalSide builds one side: its policy client (shared by sides on the same
// endpoints), its model (loading the adapter when a path is given), its
// game and its name.
func evalSide(ctx context.Context, cfg config.Config, log *zap.Logger, clients map[string]*llm.Client, spec, name, game string) (harness.Side, error) {
	s, err := harness.ParseSide(spec)
	if err != nil {
		return harness.Side{}, err
	}
	if _, ok := rollout.Lookup(game); !ok {
		return harness.Side{}, fmt.Errorf("game %q: want one of %s", game, strings.Join(rollout.GameNames(), ", "))
	}
	c := cfg
	if s.Endpoints != nil {
		c.Policy.Endpoints = s.Endpoints
	}
	key := strings.Join(c.Policy.Endpoints, " ")
	client := clients[key]
	if client == nil {
		if client, err = newPolicy(c, log); err != nil {
			return harness.Side{}, err
		}
		clients[key] = client
	}
	model := s.Model
	if model == "" {
		model = cfg.Policy.Model
	}
	if s.AdapterPath != "" {
		if err := client.LoadLoRA(ctx, s.Model, s.AdapterPath); err != nil {
			return harness.Side{}, err
		}
	}
	if name == "" {
		name = s.Label()
	}
	c.Game.Env = game
	g, closeGame, err := newGame(c, log)
	if err != nil {
		return harness.Side{}, err
	}
	closeGame() // the evaluation games (deliberation, single) consult no judge during play
	return harness.Side{Name: name, Policy: client, Model: model, Game: g}, nil
}

func newEvalAgreementCmd(a *app) *cobra.Command {
	var (
		path, bPath, bModel, bBaseURL, bKeyEnv, label, out string
		rolloutFiles                                       []string
		sample, levels                                     int
		seed                                               int64
	)
	cmd := &cobra.Command{
		Use:   "judge-agreement --config F --rollouts R.parquet [--judge-b-config G | --judge-b-model M ...]",
		Short: "Agreement of two judges (or one judge twice: test-retest) on the same rollouts' final completions",
		Long: `Judge A is the config's judge (override its keys with --judge.model=... and
the like). Judge B is the judge of --judge-b-config, else judge A's
configuration again (test-retest), with --judge-b-model, --judge-b-base-url
and --judge-b-api-key-env applied on top. No judge cache is used, so every
verdict is asked for. Failed rollouts are skipped; a rollout either judge
fails to score is excluded and counted. Prints exact and ±1 agreement,
Pearson r, quadratic-weighted kappa and the confusion matrix (seed 000
table 7); --out writes them as JSON that parley report reads.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(cmd, path)
			if err != nil {
				return err
			}
			log, err := a.logger(&cfg)
			if err != nil {
				return err
			}
			if len(rolloutFiles) == 0 {
				return fmt.Errorf("eval judge-agreement: --rollouts is required")
			}
			cfgB := cfg
			retest := true
			if bPath != "" {
				if cfgB, err = config.Load(bPath, nil); err != nil {
					return fmt.Errorf("eval judge-agreement: --judge-b-config: %w", err)
				}
				retest = false
			}
			for _, o := range []struct {
				v   string
				dst *string
			}{{bModel, &cfgB.Judge.Model}, {bBaseURL, &cfgB.Judge.BaseURL}, {bKeyEnv, &cfgB.Judge.APIKeyEnv}} {
				if o.v != "" && o.v != *o.dst {
					*o.dst = o.v
					retest = false
				}
			}
			if err := cfgB.Validate(); err != nil {
				return fmt.Errorf("eval judge-agreement: judge B: %w", err)
			}
			var rs []dataset.Rollout
			for _, f := range rolloutFiles {
				part, err := dataset.ReadAllRollouts(f)
				if err != nil {
					return err
				}
				rs = append(rs, part...)
			}
			ja, closeA, err := newJudge(cfg, "", log)
			if err != nil {
				return fmt.Errorf("eval judge-agreement: judge A: %w", err)
			}
			defer closeA()
			jb, closeB, err := newJudge(cfgB, "", log.Named("b"))
			if err != nil {
				return fmt.Errorf("eval judge-agreement: judge B: %w", err)
			}
			defer closeB()
			if label == "" {
				label = ja.Name() + " vs. " + jb.Name()
				if retest {
					label = ja.Name() + ", test-retest"
				}
			}
			if !cmd.Flags().Changed("seed") {
				seed = cfg.Run.Seed
			}
			rep, err := harness.RunAgreement(cmd.Context(), rs, harness.AgreementOptions{
				JudgeA: ja, JudgeB: jb, Label: label, Levels: levels, Sample: sample, Seed: seed,
				Concurrency: cfg.Judge.Concurrency, Logger: log,
			})
			if err != nil {
				return err
			}
			if err := harness.WriteAgreement(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			if out != "" {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
				log.Info("agreement written", zap.String("path", out))
			}
			return nil
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.StringSliceVar(&rolloutFiles, "rollouts", nil, "rollouts parquet file(s) (rollouts/step-N.parquet, parley rollout's rollouts.parquet)")
	f.StringVar(&bPath, "judge-b-config", "", "config file whose judge section is judge B (default: judge A's again)")
	f.StringVar(&bModel, "judge-b-model", "", "judge B's model")
	f.StringVar(&bBaseURL, "judge-b-base-url", "", "judge B's OpenAI-compatible base URL")
	f.StringVar(&bKeyEnv, "judge-b-api-key-env", "", "environment variable holding judge B's API key")
	f.IntVar(&sample, "sample", 0, "judge a sample of N rollouts balanced by score level (the stored scores, else judge A's); 0: all")
	f.Int64Var(&seed, "seed", 0, "seed of the sample (default: run.seed)")
	f.IntVar(&levels, "levels", harness.DefaultLevels, "score levels: scores must be integers in 1..levels")
	f.StringVar(&label, "label", "", "name of the pair in results (default: the judge models)")
	f.StringVar(&out, "out", "", "write the result (report.AgreementResult with the confusion matrix and items) to this JSON file")
	return cmd
}
