"""Logits processing and sampling on hand-made logits."""

from __future__ import annotations

import math

import pytest
import torch

from inference.sampling import SamplingParams, process_logits, sample

LOGITS = torch.log(torch.tensor([[0.5, 0.25, 0.15, 0.10]]))


@pytest.mark.parametrize(
    "params, kept",
    [
        (SamplingParams(), [0, 1, 2, 3]),
        (SamplingParams(top_k=2), [0, 1]),
        (SamplingParams(top_p=0.7), [0, 1]),  # 0.5 + 0.25 covers 0.7
        (SamplingParams(top_p=0.5), [0]),
        (SamplingParams(top_p=0.8), [0, 1, 2]),
        (SamplingParams(min_p=0.4), [0, 1]),  # keep p >= 0.4 * 0.5
        (SamplingParams(top_k=3, top_p=0.7), [0, 1]),
    ],
)
def test_process_logits_filters(params, kept):
    x = process_logits(LOGITS.clone(), [params])
    got = [i for i in range(4) if math.isfinite(float(x[0, i]))]
    assert got == kept, f"process_logits({params}) keeps {got}, want {kept}"


def test_temperature_and_processed_logprobs():
    p = SamplingParams(temperature=0.5, top_k=2)
    g = torch.Generator().manual_seed(0)
    raw = sample(LOGITS, [p], [g], "raw_logprobs")
    g = torch.Generator().manual_seed(0)
    proc = sample(LOGITS, [p], [g], "processed_logprobs")
    assert int(raw.tokens[0]) == int(proc.tokens[0]) and int(raw.tokens[0]) in (0, 1)
    tok = int(raw.tokens[0])
    assert float(raw.logprobs[0]) == pytest.approx(math.log([0.5, 0.25][tok]), rel=1e-5)
    # tempered and renormalised over the top 2: p^2 / (0.5^2 + 0.25^2)
    want = [0.25 / 0.3125, 0.0625 / 0.3125][tok]
    assert float(proc.logprobs[0]) == pytest.approx(math.log(want), rel=1e-5)


def test_greedy_and_seeded_sampling():
    greedy = sample(LOGITS, [SamplingParams(temperature=0.0)], [None])
    assert int(greedy.tokens[0]) == 0 and float(greedy.logprobs[0]) == pytest.approx(math.log(0.5))
    draws = lambda seed: [int(sample(LOGITS, [SamplingParams()], [torch.Generator().manual_seed(seed + i)]).tokens[0]) for i in range(40)]
    assert draws(1) == draws(1)
    counts = [draws(1).count(i) for i in range(4)]
    assert counts[0] > counts[3]
