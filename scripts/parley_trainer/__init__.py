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

Tools: tiny_model (a tiny random-weight Qwen3 model whose tokenizer and chat
template behave as Qwen3's), serve_vllm (vLLM's CPU server with the flags
parley needs), bench (trainer throughput).

    python -m parley_trainer --help
    python -m parley_trainer.tiny_model --out models/tiny --seed 0
    python -m parley_trainer.serve_vllm --model models/tiny --served-model-name tiny --port 8000
"""
