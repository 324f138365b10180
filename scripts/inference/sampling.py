"""Logits processing and sampling, in vLLM's order: temperature, min_p,
top_k, top_p, then a draw from the resulting distribution (argmax when the
temperature is below 1e-5).

Logprobs modes, as vLLM's --logprobs-mode:
- raw_logprobs (vLLM's default): log_softmax of the model's logits, before
  temperature and filtering.
- processed_logprobs: log_softmax of the logits actually sampled from, after
  temperature, min_p, top_k and top_p (filtered tokens are -inf). For greedy
  rows these are the raw logprobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

GREEDY_EPS = 1e-5
LOGPROBS_MODES = ("raw_logprobs", "processed_logprobs")


@dataclass(frozen=True)
class SamplingParams:
    """One row's sampling parameters (top_k <= 0 and top_p >= 1 disable
    those filters)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_EPS


def process_logits(logits: torch.Tensor, params: list[SamplingParams]) -> torch.Tensor:
    """Apply temperature, min_p, top_k and top_p to logits [B, V] (float32)
    row by row; filtered entries become -inf. Greedy rows use temperature 1."""
    b, v = logits.shape
    dev = logits.device
    temp = torch.tensor([1.0 if p.greedy else p.temperature for p in params], dtype=torch.float32, device=dev)
    x = logits / temp.view(b, 1)
    neg_inf = torch.tensor(float("-inf"), device=dev)

    min_p = torch.tensor([p.min_p for p in params], dtype=torch.float32, device=dev)
    if (min_p > 0).any():
        probs = torch.softmax(x, dim=-1)
        thresh = probs.max(dim=-1, keepdim=True).values * min_p.view(b, 1)
        x = torch.where(probs < thresh, neg_inf, x)

    top_k = torch.tensor([p.top_k if 0 < p.top_k < v else v for p in params], dtype=torch.long, device=dev)
    top_p = torch.tensor([p.top_p if 0 < p.top_p < 1 else 1.0 for p in params], dtype=torch.float32, device=dev)
    if (top_k < v).any() or (top_p < 1).any():
        # As vLLM: sort ascending, mask below the k-th largest, then mask the
        # low tail whose cumulative probability is <= 1 - p (keeping at least
        # the most likely token).
        sorted_x, idx = x.sort(dim=-1, descending=False)
        if (top_k < v).any():
            kth = sorted_x.gather(-1, (v - top_k).clamp(min=0).view(b, 1))
            sorted_x = torch.where(sorted_x < kth, neg_inf, sorted_x)
        if (top_p < 1).any():
            probs_sort = sorted_x.softmax(dim=-1)
            cum = probs_sort.cumsum(dim=-1)
            mask = cum <= (1 - top_p.view(b, 1))
            mask[:, -1] = False
            sorted_x = sorted_x.masked_fill(mask, float("-inf"))
        x = torch.empty_like(x).scatter_(-1, idx, sorted_x)
    return x


@dataclass
class Step:
    """One sampling step for a batch of rows."""

    tokens: torch.Tensor  # long [B]
    logprobs: torch.Tensor  # float [B]: logprob of the chosen token (per mode)
    lp_table: torch.Tensor  # float [B, V]: the logprobs (per mode) top-k is read from


def sample(
    logits: torch.Tensor,
    params: list[SamplingParams],
    generators: list[torch.Generator | None],
    logprobs_mode: str = "raw_logprobs",
) -> Step:
    """Choose one token per row. A row's draw uses only its own generator,
    so a seeded request gives the same tokens whatever else is batched with
    it (up to floating-point differences of the batched forward)."""
    logits = logits.float()
    raw = torch.log_softmax(logits, dim=-1)
    processed_logits = process_logits(logits, params)
    processed = torch.log_softmax(processed_logits, dim=-1)
    probs = processed.exp()
    toks = torch.empty(len(params), dtype=torch.long)
    for i, p in enumerate(params):
        if p.greedy:
            toks[i] = int(torch.argmax(logits[i]))
        else:
            toks[i] = int(torch.multinomial(probs[i], 1, generator=generators[i]))
    toks = toks.to(logits.device)
    if logprobs_mode == "processed_logprobs":
        greedy = torch.tensor([p.greedy for p in params], device=logits.device).view(-1, 1)
        table = torch.where(greedy, raw, processed)
    else:
        table = raw
    chosen = table.gather(-1, toks.view(-1, 1)).squeeze(-1)
    return Step(tokens=toks, logprobs=chosen, lp_table=table)
