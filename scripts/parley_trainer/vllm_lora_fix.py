"""Keep base-model requests free of LoRA on vLLM's CPU build.

vLLM 0.32's CPU LoRA kernels (vllm/lora/ops/torch_ops/lora_ops.py, used by
punica_cpu) pick each token's adapter weights with
`lora_weights[lora_indices]`, and a token of a request without an adapter
has index -1: Python indexing takes the LAST adapter slot. Once
--max-loras adapters have been loaded (slots are not cleared on unload),
every base-model request is computed with the adapter in the last slot.
Measured on the quickstart's tiny model: greedy base completions changed
from '' to 'ave ave ave…' after four adapters had been loaded, and the
held-out evaluation's "base" side played a trained adapter.

install() wraps the three bgmv ops so that the weights get one more slot,
all zeros, at the end: index -1 then selects zeros, and base tokens get no
LoRA, as on GPU (whose Triton kernels skip -1). The GPU path does not call
these ops, so the wrapper changes nothing there.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_WRAPPED = "_parley_zero_slot"


def _with_zero_slot(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(
        inputs: torch.Tensor,
        lora_weights: torch.Tensor,
        output_tensor: torch.Tensor,
        lora_indices_tensor: torch.Tensor,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        import torch

        if bool((lora_indices_tensor < 0).any()):
            pad = lora_weights.new_zeros((1, *lora_weights.shape[1:]))
            lora_weights = torch.cat([lora_weights, pad], dim=0)
        return fn(inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs)

    setattr(wrapper, _WRAPPED, True)
    return wrapper


def install() -> bool:
    """Wrap vLLM's CPU bgmv ops (where they are bound); False when vLLM has
    none (another version)."""
    try:
        from vllm.lora.ops import torch_ops
        from vllm.lora.ops.torch_ops import lora_ops
    except Exception:  # noqa: BLE001 (importing vLLM's modules may raise anything; then there is nothing to wrap)
        return False
    modules = [lora_ops, torch_ops]
    try:
        from vllm.lora.punica_wrapper import punica_cpu

        modules.append(punica_cpu)
    except Exception:  # noqa: BLE001 (as above: an optional binding)
        pass
    done = False
    for name in ("bgmv_shrink", "bgmv_expand", "bgmv_expand_slice"):
        fn = getattr(lora_ops, name, None)
        if fn is None:
            continue
        wrapped = fn if getattr(fn, _WRAPPED, False) else _with_zero_slot(fn)
        for m in modules:
            if hasattr(m, name):
                setattr(m, name, wrapped)
        done = True
    return done
