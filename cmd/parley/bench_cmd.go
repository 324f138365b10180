package main

import (
	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/spf13/cobra"
)

const benchLong = `Generates an answer to every item of the benchmark's local data file
(IFEval input_data.jsonl; GPQA Diamond CSV/parquet; AIME JSON(L)/parquet)
from the config's policy endpoints, once per run: the item as one user
message rendered with chat_template_kwargs enable_thinking for --mode, then
/v1/completions with Qwen3's recommended sampling for the mode and a seed
per item and run. Responses go to OUT/<benchmark>-<model>.responses.jsonl,
the per-item scoring to OUT/<benchmark>-<model>.scores.json, and the results
(report.BenchResult, mean ± SD of accuracy over runs) to OUT/<benchmark>.json.
With --adapter NAME[=PATH] the base model and the adapter are run and
reported side by side.

--responses [MODEL=]FILE (repeatable) scores responses already generated
instead (offline; no server is needed; MODEL names the column, default
base). FILE is JSON lines, one response a line, as bench writes them to
OUT/<benchmark>-<model>.responses.jsonl:

  {"id": "1001", "run": 0, "response": "the model's whole answer"}

  id        the item's id in --data: IFEval's key; GPQA's "Record ID" (or
            id, ID); AIME's id, ID, problem_idx, idx or "Problem ID" (a
            string or a number). Items without an id column get
            "gpqa-"/"aime-" and a hash of the question: score files that
            bench wrote.
  run       the run, an integer from 0.
  response  the text as generated, thinking block included: it is
            stripped before scoring. IFEval scores it exactly as given (no
            trimming), as the reference does.
  expected  optional: the answer the item expects (GPQA's shuffled letter,
            AIME's integer); scoring fails when it disagrees, so a GPQA file
            scored with another --seed or data file is refused.

For IFEval the reference's input_response_data format, {"prompt": ...,
"response": ...} a line, is accepted too (matched by prompt text, run 0).
Every run in FILE must answer every item of --data: a file that misses
items is an error naming them, not a lower score. GPQA's choice order
depends on --seed: score with the seed the responses were generated with.

--scorer reads GPQA's and AIME's answers the way a published evaluation
does, so a number can be reported beside it:

  parley            the default: GPQA's last answer statement ("Answer: C",
                    "the answer is (C)", \boxed{C}, ...), AIME's last \boxed{}
                    read as an integer (units, %, degrees, "n = 467" allowed;
                    lists refused), after the thinking block.
  lm-eval-strict    GPQA: lm-eval 0.4.13's strict-match filter ("The answer
                    is (C)"), exact match as lm-eval scores it.
  lm-eval-flexible  GPQA: lm-eval 0.4.13's flexible-extract filter (the last
                    "(C)", else a choice's text, else ": C").
  simple-evals      GPQA: simple-evals' pattern (the first "Answer: C").
  math-verify       AIME: Hugging Face's math-verify package itself, run in
                    parley's Python environment (--python, else
                    $PARLEY_PYTHON, else .venv/bin/python, else python3;
                    make venv installs it).

The references read a response after its last </think>, and a response cut
off inside its thinking block (<think> never closed) whole, thinking as
answer, as they do; parley's scorer gives such a response no answer. The
table says how many there were. Under a reference scorer the results go to
OUT/<benchmark>.<scorer>.json and OUT/<benchmark>-<model>.<scorer>.scores.json,
beside parley's; the results and the table name the scorer.

IFEval's headline number is the prompt-level strict accuracy (ifeval); the
instruction-level and loose accuracies are written beside it. GPQA data is
the user's own file and is never written out: only item ids and answer
letters are.`

func newBenchCmd(a *cli) *cobra.Command {
	var path, python string
	var force bool
	var o harness.BenchOptions
	cmd := &cobra.Command{
		Use:       "bench ifeval|gpqa|aime24|aime25 --config F --data FILE",
		Short:     "Benchmark the policy (base, and an adapter side by side): generate, keep the responses, score (seed 000 table 4)",
		ValidArgs: []string{"ifeval", "gpqa", "aime24", "aime25"},
		Args:      cobra.ExactArgs(1),
		Long:      benchLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			u := usesPolicy
			if len(o.Responses) > 0 {
				u = 0 // scoring given responses asks no server
			}
			cfg, log, err := a.setup(cmd, path, u)
			if err != nil {
				return err
			}
			o.Benchmark = args[0]
			return app.Bench(cmd.Context(), cfg, a.env(cmd, log), o, cmd.Flags().Changed("seed"), force, python)
		},
	}
	configFlags(cmd, &path)
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "the benchmark's local data file (required)")
	f.IntVar(&o.Runs, "runs", 2, "generation runs (seed 000 table 4 reports two)")
	f.StringVar(&o.Adapter, "adapter", "", "also run this LoRA adapter beside the base model: NAME (loaded) or NAME=PATH (load it first)")
	f.StringVar(&o.Mode, "mode", "", "thinking or non-thinking: chat template switch and Qwen3 sampling preset (default: policy.enable_thinking)")
	f.IntVar(&o.MaxTokens, "max-tokens", 0, "new tokens per answer (default: the preset's 32768; always capped to the context left)")
	f.IntVar(&o.Concurrency, "concurrency", 0, "questions in flight (default: rollout.concurrency)")
	f.Int64Var(&o.Seed, "seed", 0, "seed of sampling and of GPQA's choice shuffle (default: run.seed)")
	f.StringArrayVar(&o.Responses, "responses", nil, "score this responses file instead of generating: [MODEL=]FILE, repeatable (MODEL defaults to base)")
	f.StringVar(&o.Scorer, "scorer", "parley", "how answers are read: parley; gpqa: lm-eval-strict, lm-eval-flexible, simple-evals; aime: math-verify")
	f.StringVar(&python, "python", "", "the Python of parley's environment, for --scorer math-verify (default: $PARLEY_PYTHON, else .venv/bin/python, else python3)")
	f.StringVar(&o.Out, "out", "bench-results", "output directory")
	f.BoolVar(&force, "force", false, "replace OUT/<benchmark>.json and its files when they exist")
	return cmd
}
