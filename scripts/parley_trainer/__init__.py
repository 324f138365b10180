"""parley's Python side.

The GRPO trainer reads each step's batch (parquet, schema version 1) through
the file or HTTP handshake, trains a LoRA adapter (or the full model) with the
clipped-surrogate GRPO loss, and writes the checkpoint, then DONE.

Trainer modules: batch (reading and validating a batch), loss (per-token
logprobs, the GRPO loss, truncated importance sampling, the sampler/trainer
mismatch, the aggregations), packing (micro-batches by a token budget),
modeling (policy and reference models), checkpoint (save, resume, DONE),
handshake (file and HTTP), config (TrainConfig and the command line that
fills it), train (the loop and main).

Serving the trainer's runs: serve_vllm (vLLM's CPU server with the flags
parley needs; parley starts it as train.server_command) and vllm_lora_fix
(loaded into every vLLM process serve_vllm starts).

The tools beside the trainer (the tiny model, the cold start, the trainer
benchmark) are the parley_tools package.

    python -m parley_trainer --help
    python -m parley_trainer.serve_vllm --model models/tiny --served-model-name tiny --port 8000
"""
