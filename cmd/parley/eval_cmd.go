package main

import (
	"strings"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/rollout"
	"github.com/spf13/cobra"
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

func newEvalPairwiseCmd(a *cli) *cobra.Command {
	var path string
	var fl app.PairwiseOptions
	cmd := &cobra.Command{
		Use:   "pairwise --config F --left SIDE --right SIDE --set conflict|open-ended",
		Short: "Win rate of a left model against a right model, judged pairwise in both orders",
		Long:  pairwiseLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path, usesPolicy|usesChatJudge)
			if err != nil {
				return err
			}
			return app.Pairwise(cmd.Context(), cfg, a.env(cmd, log), fl)
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.StringVar(&fl.Left, "left", "", "left side: base, adapter:NAME[=PATH], URL or URL#NAME (required)")
	f.StringVar(&fl.Right, "right", "", "right side, as --left (required)")
	f.StringVar(&fl.LeftName, "left-name", "", "left side's name in results (default: the adapter or model name, or base)")
	f.StringVar(&fl.RightName, "right-name", "", "right side's name in results")
	f.StringVar(&fl.LeftGame, "left-game", "", "game the left side plays: deliberation or single (default: deliberation for --set conflict, single for open-ended)")
	f.StringVar(&fl.RightGame, "right-game", "", "game the right side plays, as --left-game")
	f.StringVar(&fl.Set, "set", "", "eval set: a game's held-out set ("+strings.Join(rollout.EvalSetNames(), ", ")+"); default the configured game's")
	f.StringVar(&fl.Data, "data", "", "prompts file replacing the set's default curriculum")
	f.IntVar(&fl.Runs, "runs", 3, "seeded runs per decoding")
	f.StringSliceVar(&fl.Decodings, "decoding", []string{report.DecodingGreedy, report.DecodingSampling}, "decodings: greedy, sampling")
	f.StringSliceVar(&fl.Aspects, "aspect", nil, "judged aspects: collective_agency (ca), conflict_resolution (default: both for --set conflict, collective_agency for open-ended)")
	f.IntVar(&fl.Prompts, "prompts", 0, "number of prompts to draw (0: every prompt of the set)")
	f.StringVar(&fl.Out, "out", "", "write the results (report.PairwiseResult objects) to this JSON file")
	f.StringVar(&fl.Details, "details", "", "write every comparison (finals, verdicts, rationales) to this JSONL file")
	f.StringVar(&fl.CacheDir, "judge-cache", "", "directory of a judge cache to reuse verdicts across invocations (default: none)")
	f.BoolVar(&fl.Force, "force", false, "replace the --out and --details files when they exist")
	_ = cmd.MarkFlagRequired("left")
	_ = cmd.MarkFlagRequired("right")
	return cmd
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

func newEvalAgreementCmd(a *cli) *cobra.Command {
	var path string
	var fl app.AgreementOptions
	cmd := &cobra.Command{
		Use:   "judge-agreement --config F --rollouts R.parquet [--judge-b-config G | --judge-b-model M ...]",
		Short: "Agreement of two judges (or one judge twice: test-retest) on the same rollouts' final completions",
		Long:  agreementLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path, usesJudge)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("seed") {
				fl.Seed = cfg.Run.Seed
			}
			return app.Agreement(cmd.Context(), cfg, a.env(cmd, log), fl)
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.StringSliceVar(&fl.Rollouts, "rollouts", nil, "rollouts parquet file(s) (rollouts/step-N.parquet, parley rollout's rollouts.parquet)")
	f.StringVar(&fl.BConfig, "judge-b-config", "", "config file whose judge section is judge B (default: judge A's again)")
	f.StringVar(&fl.BModel, "judge-b-model", "", "judge B's model")
	f.StringVar(&fl.BBaseURL, "judge-b-base-url", "", "judge B's OpenAI-compatible base URL")
	f.StringVar(&fl.BKeyEnv, "judge-b-api-key-env", "", "environment variable holding judge B's API key")
	f.IntVar(&fl.Sample, "sample", 0, "judge a sample of N rollouts balanced by score level (the stored scores, else judge A's); 0: all")
	f.Int64Var(&fl.Seed, "seed", 0, "seed of the sample (default: run.seed)")
	f.IntVar(&fl.Levels, "levels", harness.DefaultLevels, "score levels: scores must be integers in 1..levels")
	f.StringVar(&fl.Label, "label", "", "name of the pair in results (default: the judge models)")
	f.StringVar(&fl.Out, "out", "", "write the result (report.AgreementResult with the confusion matrix and items) to this JSON file")
	return cmd
}
