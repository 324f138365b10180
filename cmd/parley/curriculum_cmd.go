package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/dataset/generate"
	"github.com/spf13/cobra"
)

func newCurriculumCmd(a *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "curriculum",
		Short: "Make curricula: dilemmas with persona pairs, open-ended questions",
	}
	cmd.AddCommand(newCurriculumGenerateCmd(a))
	return cmd
}

// generateLong is curriculum generate's help.
const generateLong = `Asks the configured generator (any OpenAI-compatible endpoint, the config's generator section)
for prompts, checks each (category, form, length, duplicates and near-duplicates), and appends the
accepted ones to F until it holds N. Dilemmas are mixed over professional, interpersonal and
micro_ethics (generator.mix, default 30/40/30) and paired with persona pairs from the library
(curriculum.personas), or with --generate-personas with generated pairs checked to be opposed.
--kind open-ended writes the single-agent baseline's open-ended questions (no personas).
A share of each category (--eval-fraction) is marked split "eval", the rest "train".
The same seed and generator give the same file; rerunning with the same F continues it.`

func newCurriculumGenerateCmd(a *cli) *cobra.Command {
	var (
		path                  string
		fl                    app.CurriculumOptions
		seed                  int64
		evalFraction, nearDup float64
		mix                   string
	)
	cmd := &cobra.Command{
		Use:   "generate --n N --out F",
		Short: "Write N prompts with the generator LLM to F (.jsonl or .parquet), resuming what F holds",
		Long:  generateLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.setup(cmd, path, usesGenerator)
			if err != nil {
				return err
			}
			flags := cmd.Flags()
			if flags.Changed("seed") {
				fl.Seed = &seed
			}
			if flags.Changed("eval-fraction") {
				fl.EvalFraction = &evalFraction
			}
			if flags.Changed("near-dup-threshold") {
				fl.NearDup = &nearDup
			}
			if flags.Changed("mix") {
				fl.Mix = &mix
			}
			return app.GenerateCurriculum(cmd.Context(), cfg, a.env(cmd, log), fl)
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.IntVar(&fl.N, "n", 0, "number of prompts the output should hold (those already in it count)")
	f.StringVar(&fl.Out, "out", "", "output file: .jsonl (appended as it goes) or .parquet")
	f.StringVar(&fl.Kind, "kind", generate.KindDilemmas, "dilemmas or open-ended")
	f.Int64Var(&seed, "seed", 0, "seed of the requests, persona pairing and eval split (default: run.seed)")
	f.Float64Var(&evalFraction, "eval-fraction", 0, "share of each category held out as split \"eval\" (default: generator.eval_fraction, 0.1)")
	f.Float64Var(&nearDup, "near-dup-threshold", 0, "word 3-shingle Jaccard similarity that makes a near-duplicate (default: generator.near_dup_threshold, 0.7; 1: exact only)")
	f.StringVar(&mix, "mix", "", "category weights, e.g. professional=0.3,interpersonal=0.4,micro_ethics=0.3 (default: generator.mix)")
	f.BoolVar(&fl.GeneratePersonas, "generate-personas", false, "generate a persona pair per dilemma, checked to be opposed, instead of using the library")
	return cmd
}
