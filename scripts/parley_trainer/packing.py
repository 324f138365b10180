"""Packing sequences into padded micro-batches by a token budget."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .batch import Sequence


def pack_micro_batches(lengths: list[int], token_budget: int) -> list[list[int]]:
    """Group row indices into micro-batches whose padded size (rows x longest
    row) stays within token_budget. Rows are taken longest first, so rows of
    similar length share a micro-batch; a row longer than the budget gets a
    micro-batch of its own. token_budget <= 0 means one micro-batch."""
    if not lengths:
        return []
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    if token_budget <= 0:
        return [order]
    groups: list[list[int]] = []
    cur: list[int] = []
    cur_max = 0
    for i in order:
        n = lengths[i]
        new_max = max(cur_max, n)
        if cur and new_max * (len(cur) + 1) > token_budget:
            groups.append(cur)
            cur, new_max = [], n
        cur.append(i)
        cur_max = new_max
    if cur:
        groups.append(cur)
    return groups


@dataclass
class MicroBatch:
    """Padded tensors of one micro-batch (right padding; the attention mask
    is 0 on pads, whose loss mask and weight are 0)."""

    input_ids: torch.Tensor  # long [B, L]
    attention_mask: torch.Tensor  # long [B, L]
    loss_mask: torch.Tensor  # float [B, L]
    inference_logprobs: torch.Tensor  # float [B, L]
    advantages: torch.Tensor  # float [B, L]
    weights: torch.Tensor  # float [B, L]
    temperature: torch.Tensor  # float [B]
    # the trainer's logprobs before the step's update, when computed apart
    old_logprobs: torch.Tensor | None = None  # float [B, L]

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum().item())

    def to(self, device: torch.device | str) -> MicroBatch:
        return MicroBatch(
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            loss_mask=self.loss_mask.to(device),
            inference_logprobs=self.inference_logprobs.to(device),
            advantages=self.advantages.to(device),
            weights=self.weights.to(device),
            temperature=self.temperature.to(device),
            old_logprobs=None if self.old_logprobs is None else self.old_logprobs.to(device),
        )


def collate(
    seqs: list[Sequence],
    weights: list[np.ndarray],
    pad_id: int,
    zero_weights: bool = False,
    old_logprobs: list[np.ndarray] | None = None,
) -> MicroBatch:
    """Pad sequences (with their step-level token weights and, when given,
    the trainer's logprobs before the update) into a MicroBatch.
    zero_weights makes a dummy micro-batch that contributes nothing (for a
    rank with fewer micro-batches than another)."""
    b = len(seqs)
    length = max(len(s) for s in seqs)
    ids = np.full((b, length), pad_id, dtype=np.int64)
    att = np.zeros((b, length), dtype=np.int64)
    mask = np.zeros((b, length), dtype=np.float32)
    lp = np.zeros((b, length), dtype=np.float32)
    adv = np.zeros((b, length), dtype=np.float32)
    w = np.zeros((b, length), dtype=np.float32)
    temp = np.zeros((b,), dtype=np.float32)
    old = np.zeros((b, length), dtype=np.float32) if old_logprobs is not None else None
    for j, (s, sw) in enumerate(zip(seqs, weights)):
        n = len(s)
        ids[j, :n] = s.input_ids
        att[j, :n] = 1
        if not zero_weights:
            mask[j, :n] = s.loss_mask
            w[j, :n] = sw
        lp[j, :n] = s.inference_logprobs
        adv[j, :n] = s.advantages
        temp[j] = s.temperature
        if old is not None and old_logprobs is not None:
            old[j, :n] = old_logprobs[j]
    return MicroBatch(
        input_ids=torch.from_numpy(ids),
        attention_mask=torch.from_numpy(att),
        loss_mask=torch.from_numpy(mask),
        inference_logprobs=torch.from_numpy(lp),
        advantages=torch.from_numpy(adv),
        weights=torch.from_numpy(w),
        temperature=torch.from_numpy(temp),
        old_logprobs=None if old is None else torch.from_numpy(old),
    )
