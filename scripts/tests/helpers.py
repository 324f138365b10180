"""Test helpers: batches whose inference logprobs come from the model; the
scalars of TensorBoard event files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch


def load_model(model_dir: Path) -> Any:
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    m.eval()
    return m


@torch.no_grad()
def model_logprobs(model: Any, ids: list[int], temperature: float = 1.0) -> np.ndarray:
    """Per-position logprobs of ids under model (position 0: 0)."""
    x = torch.tensor([ids])
    logits = model(input_ids=x).logits[0, :-1].float() / (temperature if temperature > 1e-5 else 1.0)
    lp = torch.log_softmax(logits, -1).gather(-1, x[0, 1:, None]).squeeze(-1)
    return np.concatenate([[0.0], lp.numpy()]).astype(np.float32)


def make_rows(
    model: Any,
    n: int,
    vocab: int,
    seed: int = 0,
    prompt_len: int = 6,
    gen_len: int = 10,
    temperature: float = 1.0,
    on_policy: bool = True,
) -> list[dict[str, Any]]:
    """n batch rows: a random prompt (mask 0) then random 'generated' tokens
    (mask 1) with group-relative advantages; inference logprobs are the
    model's own (ratio 1) when on_policy, else random."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=n).astype(np.float32)
    adv = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
    rows = []
    for i in range(n):
        length = prompt_len + gen_len + int(rng.integers(0, 4))
        ids = rng.integers(3, vocab, size=length).tolist()
        mask = [0] * prompt_len + [1] * (length - prompt_len)
        if on_policy:
            lp = model_logprobs(model, ids, temperature)
        else:
            lp = -rng.uniform(5, 9, size=length).astype(np.float32)
        lp = np.where(np.array(mask) > 0, lp, 0.0)
        rows.append(
            {
                "input_ids": ids,
                "loss_mask": mask,
                "inference_logprobs": lp.tolist(),
                "advantages": [float(adv[i]) * m for m in mask],
                "reward": float(rewards[i]),
                "temperature": temperature,
                "sample_id": f"s{i}",
                "group_id": "g0",
            }
        )
    return rows


def read_tensorboard(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in log_dir's event files: tag -> [(step, value)]."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
