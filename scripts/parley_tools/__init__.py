"""parley's Python tools: programs beside the trainer, not part of it.

They use the trainer package (parley_trainer) but the trainer never imports
them:

- tiny_model: a tiny random-weight Qwen3 model whose tokenizer and chat
  template behave as Qwen3's (the tests' and the quickstart's model);
- cold_start: teach a model seed 002's move format (votes at even odds,
  random packages) by a supervised fine-tune on the prompts the game gave it;
- bench: the trainer's throughput (training tokens per second of the GRPO
  step) on a synthetic batch, through the trainer's own code;
- mathverify: the math-verify scorer of `parley bench aime24|aime25
  --scorer math-verify` (JSON lines in, verdicts out);
- bench_synth: the synthetic benchmark set parley's GPQA and AIME scorers
  are measured on, and the reference scorers' verdicts on it.

    python -m parley_tools.tiny_model --out models/tiny --seed 0
    python -m parley_tools.cold_start --help
    python -m parley_tools.bench --model models/tiny
    python -m parley_tools.mathverify < pairs.jsonl
    python -m parley_tools.bench_synth generate

The orchestrator benchmark's Python baseline stays a standalone script,
scripts/bench_orchestrator_py.py (it imports nothing of parley's, and
parley's Go benchmark runs it by path).
"""
