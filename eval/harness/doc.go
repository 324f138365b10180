// Package harness runs parley's evaluations against live endpoints and
// scores them, the work behind `parley eval` and `parley bench`:
//
//   - pairwise comparisons of a left and a right model (seed 000 tables 2
//     and 3): each side plays the deliberation or single-agent game on the
//     same prompts under greedy and sampling decoding over several seeded
//     runs, a pairwise judge compares the two final completions in both
//     orders, and the left win rate (a tie counts half) and each side's
//     rounds of negotiation are summarised as report.PairwiseResult;
//   - judge agreement (table 7): two judges, or one judge twice, score the
//     final completions of the same rollouts, optionally on a sample
//     balanced by score level, giving exact and ±1 agreement, Pearson r,
//     quadratic-weighted kappa and the confusion matrix;
//   - benchmark checks (table 4): generation for IFEval, GPQA Diamond and
//     AIME 2024/2025 through the policy client with Qwen3's sampling
//     presets, responses kept as JSONL for offline re-scoring, and scoring
//     into report.BenchResult (mean ± SD over runs) by parley's scorer or a
//     reference's (BenchOptions.Scorer: lm-eval's, simple-evals' or
//     math-verify's rules, named in the results);
//   - the evaluation of a step's adapter while training (train.eval_every,
//     StepEvaluator): the pairwise comparison above against the base
//     model on the held-out prompts, recorded as RUN/evals/step-N.json
//     (EvalResult) and a metrics.jsonl line.
//
// The package never reads flags or config: callers pass policies, judges
// and options. Tables for a terminal are written by the Write*Table
// functions.
package harness
