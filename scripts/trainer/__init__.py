"""parley's GRPO trainer: reads each step's batch (parquet, schema version 1)
through the file or HTTP handshake, trains a LoRA adapter (or the full model)
with the clipped-surrogate GRPO loss, and writes the checkpoint, then DONE.

Modules: batch (reading and validating a batch), loss (per-token logprobs,
the GRPO loss and its aggregations), packing (micro-batches by a token
budget), modeling (policy and reference models), checkpoint (save, resume,
DONE), handshake (file and HTTP), train (the loop and the CLI).

Run from the repository root as ``python -m scripts.trainer --help`` or
``python scripts/train.py --help``.
"""
