"""vllm_lora_fix: a token without an adapter (index -1) gets no LoRA from
vLLM's CPU bgmv ops, where it used to get the last slot's."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
lora_ops = pytest.importorskip("vllm.lora.ops.torch_ops.lora_ops")

from parley_trainer import vllm_lora_fix  # noqa: E402


@pytest.mark.parametrize("name", ["bgmv_shrink", "bgmv_expand"])
def test_base_tokens_get_no_lora(name, monkeypatch):
    from vllm.lora.ops import torch_ops

    for m in (lora_ops, torch_ops):  # undone after the test
        for n in ("bgmv_shrink", "bgmv_expand", "bgmv_expand_slice"):
            monkeypatch.setattr(m, n, getattr(m, n))
    torch.manual_seed(0)
    slots, d_in, d_out = 4, 8, 6
    weights = torch.randn(slots, 1, d_out, d_in)
    x = torch.randn(3, d_in)
    x[2] = x[0]  # the same token, once without an adapter and once with the last slot's
    indices = torch.tensor([-1, 0, 3])  # base, slot 0, the last slot
    before = torch.zeros(3, d_out)
    getattr(lora_ops, name)(x, weights, before, indices)
    assert before[0].abs().sum() > 0, "the bug: the base token got the last slot's adapter"
    assert torch.allclose(before[0], before[2])
    vllm_lora_fix.install()
    after = torch.zeros(3, d_out)
    getattr(lora_ops, name)(x, weights, after, indices)
    assert torch.count_nonzero(after[0]) == 0
    assert torch.allclose(after[1:], before[1:])
