"""Trainer throughput: training tokens per second of the GRPO step (forward,
backward, optimizer) on a synthetic batch, through the trainer's own code.

    python -m parley_tools.bench --model models/tiny                 # CPU, the tiny model
    python -m parley_tools.bench --random-config 1.7b --device cuda  # random-init Qwen3 on a GPU

--random-config builds a Qwen3 of that size with random weights (nothing is
downloaded; the tokenizer is not needed): 0.6b, 1.7b.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from parley_trainer.config import TrainConfig
from parley_trainer.modeling import LoraSettings
from parley_trainer.train import Trainer, synthetic_batch

# Qwen3-0.6B and Qwen3-1.7B shapes.
CONFIGS: dict[str, dict[str, Any]] = {
    "0.6b": {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128},
    "1.7b": {"hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128},
}


def random_model(size: str, out: Path) -> Path:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=151936, tie_word_embeddings=True, max_position_embeddings=32768, **CONFIGS[size])
    torch.manual_seed(0)
    with torch.device("cpu"):
        # transformers wraps to() with functools.wraps, whose signature mypy does not bind to self
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)  # type: ignore[arg-type]
    model.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m parley_tools.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model folder")
    p.add_argument("--random-config", choices=sorted(CONFIGS), default=None)
    p.add_argument("--rows", type=int, default=16)
    p.add_argument("--length", type=int, default=256, help="tokens per row (half of them trained)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--micro-batch-tokens", type=int, default=4096)
    p.add_argument("--full-finetune", action="store_true")
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--gradient-checkpointing", action="store_true")
    a = p.parse_args(argv)
    if (a.model is None) == (a.random_config is None):
        p.error("give exactly one of --model and --random-config")
    tmp = None
    model = Path(a.model) if a.model else None
    if a.random_config:
        tmp = tempfile.TemporaryDirectory(prefix="bench-model-")
        model = random_model(a.random_config, Path(tmp.name))
    assert model is not None
    cfg = TrainConfig(
        run_dir=Path(tempfile.mkdtemp(prefix="bench-run-")),
        model=model.resolve(),
        lr=1e-6,
        lora=None if a.full_finetune else LoraSettings(r=a.lora_r, alpha=2 * a.lora_r),
        micro_batch_tokens=a.micro_batch_tokens,
        device=a.device,
        threads=a.threads,
        gradient_checkpointing=a.gradient_checkpointing,
        quiet=True,
    )
    trainer = Trainer(cfg)
    batch = synthetic_batch(trainer.vocab_size, rows=a.rows, length=a.length)
    trainer.train_on_batch(batch)  # warm-up
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        trainer.train_on_batch(batch)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / a.steps
    tokens = batch.tokens
    result = {
        "model": a.random_config or str(model),
        "device": str(trainer.accelerator.device),
        "threads": torch.get_num_threads(),
        "lora": not a.full_finetune,
        "rows": a.rows,
        "length": a.length,
        "step_seconds": round(dt, 4),
        "tokens_per_second": round(tokens / dt, 1),
        "trained_tokens_per_second": round(batch.masked_tokens / dt, 1),
    }
    if torch.cuda.is_available():
        result["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(json.dumps(result))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
