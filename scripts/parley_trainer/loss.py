"""The GRPO loss: per-token logprobs at the sampling temperature, the clipped
surrogate against the inference logprobs (or, with truncated importance
sampling, against the trainer's own logprobs, weighted by the truncated
trainer/sampler ratio), optional k3 KL to a reference, the sampler/trainer
mismatch, and the step-level aggregations.

Alignment: every per-token array is indexed by input position. Position i's
logprob is log p(input_ids[i] | input_ids[:i]), computed from the logits at
position i-1; position 0 has no context, its logprob is 0 and it is never
trained.

Aggregation is expressed as a per-token weight computed once over the whole
step (or mini-batch), so the sum over micro-batches of sum(weight * loss) is
exactly the aggregated loss of one big batch, and gradient accumulation gives
the same gradient:

- token_mean: weight 1/N, N = masked tokens in the step.
- seq_mean_token_mean: weight 1/(S * n_s), S = sequences with at least one
  masked token, n_s = masked tokens of sequence s.
- dr_grpo: weight 1/(S * C), C = --dr-grpo-max-tokens when > 0, else the
  largest n_s of the step (the longest trained span, the analogue of Dr.
  GRPO's generation budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

# the aggregations, declared in Go (config.Aggregations) and read from options.json
from .options import AGGREGATIONS

# Log-ratios are clamped to this range before exp() so that one stale token
# cannot overflow the loss (the gradient there is zero; such tokens are
# clipped anyway).
LOG_RATIO_CLAMP = 20.0

# Temperatures below this are greedy; their logprobs are at temperature 1,
# as vLLM does.
GREEDY_EPS = 1e-5


@dataclass(frozen=True)
class LossConfig:
    """The GRPO loss settings."""

    epsilon_low: float = 0.2
    epsilon_high: float = 0.28
    beta: float = 0.0
    aggregation: str = "token_mean"
    dr_grpo_max_tokens: int = 0
    # Divide logits by each row's sampling temperature before log-softmax
    # (matches a server whose logprobs are of the tempered distribution:
    # vLLM --logprobs-mode processed_logprobs). False: temperature 1
    # (vLLM's default raw_logprobs).
    temperature_scaling: bool = True
    # Truncated importance sampling cap C (0: off); see grpo_token_loss.
    tis_cap: float = 0.0

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation {self.aggregation!r}, want one of {', '.join(AGGREGATIONS)}")
        if self.epsilon_low < 0 or self.epsilon_high < 0:
            raise ValueError("epsilon_low and epsilon_high must be >= 0")
        if self.beta < 0:
            raise ValueError("beta must be >= 0")
        if not (self.tis_cap >= 0 and math.isfinite(self.tis_cap)):
            raise ValueError(f"tis_cap must be 0 (off) or a positive cap, got {self.tis_cap}")


def token_weights(masks: list[np.ndarray], aggregation: str, dr_grpo_max_tokens: int = 0) -> list[np.ndarray]:
    """Per-token weights (0 where the mask is 0) that aggregate the summed
    per-token loss of these sequences as one step; see the module doc."""
    counts = [int(m.sum()) for m in masks]
    total = sum(counts)
    trained = sum(1 for c in counts if c > 0)
    out: list[np.ndarray] = []
    if total == 0:
        return [np.zeros(m.shape, dtype=np.float32) for m in masks]
    if aggregation == "token_mean":
        for m in masks:
            out.append(m.astype(np.float64) / total)
    elif aggregation == "seq_mean_token_mean":
        for m, c in zip(masks, counts):
            out.append(m.astype(np.float64) / (trained * c) if c else np.zeros(m.shape))
    elif aggregation == "dr_grpo":
        c_max = dr_grpo_max_tokens if dr_grpo_max_tokens > 0 else max(counts)
        for m in masks:
            out.append(m.astype(np.float64) / (trained * c_max))
    else:
        raise ValueError(f"aggregation {aggregation!r}, want one of {', '.join(AGGREGATIONS)}")
    return [w.astype(np.float32) for w in out]


def effective_temperature(temperature: torch.Tensor, scaling: bool) -> torch.Tensor:
    """The temperature logits are divided by: the row's, or 1 when scaling is
    off or the row was greedy."""
    if not scaling:
        return torch.ones_like(temperature)
    return torch.where(temperature < GREEDY_EPS, torch.ones_like(temperature), temperature)


def token_logprobs(
    logits: torch.Tensor,
    input_ids: torch.Tensor,
    temperature: torch.Tensor,
    with_entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-position logprobs of input_ids under logits/temperature.

    logits [B, L, V] (position j predicts token j+1), input_ids [B, L],
    temperature [B] (already effective). Returns logp [B, L] with logp[:, 0]
    = 0, and, when asked, the entropy [B, L] of the same distribution
    (no gradient; entropy[:, 0] = 0).
    """
    b, length, _ = logits.shape
    x = logits[:, :-1, :].float() / temperature.to(torch.float32).view(b, 1, 1)
    targets = input_ids[:, 1:]
    lse = torch.logsumexp(x, dim=-1)
    picked = x.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logp = torch.zeros((b, length), dtype=torch.float32, device=logits.device)
    logp[:, 1:] = picked - lse
    ent = None
    if with_entropy:
        with torch.no_grad():
            p = F.softmax(x, dim=-1)
            e = lse - (p * x).sum(-1)
            ent = torch.zeros((b, length), dtype=torch.float32, device=logits.device)
            ent[:, 1:] = e
    return logp, ent


@dataclass
class TokenLoss:
    """The per-token loss and the per-token quantities metrics are made of
    (all [B, L], zero where the mask is 0)."""

    loss: torch.Tensor
    ratio: torch.Tensor
    clipped_low: torch.Tensor
    clipped_high: torch.Tensor
    approx_kl: torch.Tensor
    kl_ref: torch.Tensor | None
    # min(exp(old - inference), C) when truncated importance sampling is on
    tis_weight: torch.Tensor | None = None


def tis_weights(old_logp: torch.Tensor, inference_logp: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance sampling weights, per trained token:

        w = min(exp(old_logp - inference_logp), cap)

    old_logp is the trainer's logprob before this step's update, inference_logp
    the sampler's; w corrects for sampling from the sampler's distribution
    rather than the trainer's. As TRL (vllm_importance_sampling_cap, token
    level: clamp(exp(old_per_token_logps - sampling_per_token_logps),
    max=cap)) and verl (TIS: clamp(exp(old_log_prob - rollout_log_probs),
    max=tis_imp_ratio_cap)). No gradient; 0 where the mask is 0. The log
    ratio is clamped to +-20 before exp(), as verl's SAFETY_BOUND."""
    on = mask > 0
    zero = torch.zeros_like(old_logp)
    d = torch.where(on, old_logp.detach() - inference_logp, zero).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return torch.where(on, torch.exp(d).clamp(max=cap), zero)


def sampler_mismatch(trainer_logp: torch.Tensor, inference_logp: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampler/trainer mismatch per trained token (0 elsewhere), with
    r = trainer_logp - inference_logp:

        |r|                  the absolute logprob difference (TRL's
                             sampling/sampling_logp_difference)
        exp(r) - 1 - r       the k3 estimate of KL(sampler || trainer) on
                             tokens drawn from the sampler (Schulman's k3;
                             verl's rollout_corr/k3_kl uses the same r)

    trainer_logp is the trainer's logprob before the update. k3 is computed
    in float64 as expm1(r) - r: the differences are often ~1e-7, where
    exp(r) - 1 - r in float32 is all rounding."""
    on = mask > 0
    zero = torch.zeros_like(trainer_logp, dtype=torch.float64)
    r = torch.where(on, trainer_logp.detach().double() - inference_logp.double(), zero).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return torch.where(on, r.abs(), zero), torch.where(on, torch.expm1(r) - r, zero)


def grpo_token_loss(
    logp: torch.Tensor,
    inference_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    ref_logp: torch.Tensor | None = None,
    old_logp: torch.Tensor | None = None,
) -> TokenLoss:
    """The clipped-surrogate loss per token. Without truncated importance
    sampling (cfg.tis_cap == 0) the ratio is taken against the sampler's
    logprobs (verl's "bypass mode"):

        ratio = exp(logp - inference_logp)
        loss  = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A)
                + beta * k3(ref, new)

    With it (cfg.tis_cap = C > 0) the ratio is taken against the trainer's
    own logprobs before the update, old_logp (default logp.detach(): the
    same parameters, one optimizer step per batch), and the policy-gradient
    term is weighted by the truncated importance weight (tis_weights):

        ratio = exp(logp - old_logp)
        loss  = -min(ratio * A, clip(ratio, ...) * A) * min(exp(old_logp - inference_logp), C)
                + beta * k3(ref, new)

    as TRL's GRPOTrainer (per_token_loss * importance_sampling_ratio, before
    the KL term is added) and verl's TIS (pg_losses * tis_imp_ratio). k3 =
    exp(ref - new) - (ref - new) - 1. Positions where mask is 0 get exactly 0
    (and no gradient), whatever their inputs hold.
    """
    on = mask > 0
    zero = torch.zeros_like(logp)
    tis_w = None
    base = inference_logp
    if cfg.tis_cap > 0:
        base = (logp if old_logp is None else old_logp).detach()
        tis_w = tis_weights(base, inference_logp, mask, cfg.tis_cap)
    log_ratio = torch.where(on, logp - base, zero).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio)
    adv = torch.where(on, advantages, zero)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - cfg.epsilon_low, 1.0 + cfg.epsilon_high) * adv
    pg = -torch.minimum(unclipped, clipped)
    if tis_w is not None:
        pg = pg * tis_w
    kl_ref = None
    loss = pg
    if ref_logp is not None:
        d = torch.where(on, ref_logp - logp, zero)
        kl_ref = torch.where(on, torch.exp(d) - d - 1.0, zero)
        if cfg.beta > 0:
            loss = loss + cfg.beta * kl_ref
    loss = torch.where(on, loss, zero)
    with torch.no_grad():
        r = ratio.detach()
        clipped_low = (on & (adv < 0) & (r < 1.0 - cfg.epsilon_low)).float()
        clipped_high = (on & (adv > 0) & (r > 1.0 + cfg.epsilon_high)).float()
        lr = log_ratio.detach()
        # k3 estimate of KL(base || new) on tokens sampled from the sampler,
        # base being the ratio's denominator.
        approx_kl = torch.where(on, torch.exp(lr) - 1.0 - lr, zero)
    return TokenLoss(
        loss=loss,
        ratio=torch.where(on, ratio.detach(), zero),
        clipped_low=clipped_low,
        clipped_high=clipped_high,
        approx_kl=approx_kl,
        kl_ref=None if kl_ref is None else kl_ref.detach(),
        tis_weight=tis_w,
    )


def aggregate(token_loss: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum(weights * loss): this micro-batch's share of the step's loss."""
    return (token_loss * weights).sum()
