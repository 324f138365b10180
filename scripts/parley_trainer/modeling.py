"""Loading the policy (a LoRA adapter on the base model, or the full model)
and its reference for the KL term."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast

import torch

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import PreTrainedModel

# The trainable model: a LoRA adapter on the base (peft) or the base itself.
PolicyModel: TypeAlias = "PeftModel | PreTrainedModel"


@dataclass(frozen=True)
class LoraSettings:
    """LoRA settings; target_modules "all-linear" is every linear layer but
    the output head."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: list[str] | str = "all-linear"


@dataclass
class Policy:
    """The trainable model and how to get reference logits."""

    model: PolicyModel
    is_lora: bool
    reference: PreTrainedModel | None = None  # full fine-tune with beta > 0
    base_dir: Path = field(default_factory=Path)

    @contextlib.contextmanager
    def reference_mode(self, model: torch.nn.Module) -> Iterator[torch.nn.Module]:
        """Yield the module that computes reference logits: with LoRA the
        same (possibly wrapped) model with the adapter disabled; with a full
        fine-tune the frozen copy."""
        if self.is_lora:
            # load_policy made it with get_peft_model
            with cast("PeftModel", self.model).disable_adapter():
                yield model
        else:
            if self.reference is None:
                raise RuntimeError("no reference model (full fine-tune loaded with beta = 0)")
            yield self.reference


def load_policy(
    model_dir: str | Path,
    lora: LoraSettings | None,
    dtype: torch.dtype,
    need_reference: bool,
    gradient_checkpointing: bool = False,
    init_weights_from: str | Path | None = None,
) -> Policy:
    """Load the base model from model_dir and make it trainable.

    lora None means a full fine-tune; then a frozen reference copy is kept
    when need_reference. init_weights_from (full fine-tune resume) loads the
    trainable weights from a checkpoint folder instead of the base.
    """
    from transformers import AutoModelForCausalLM

    src = init_weights_from if (lora is None and init_weights_from) else model_dir
    model = AutoModelForCausalLM.from_pretrained(str(src), dtype=dtype)
    model.config.use_cache = False
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=resolve_target_modules(model, lora.target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )
        if gradient_checkpointing:
            model.enable_input_require_grads()
        peft_model = get_peft_model(model, cfg)
        return Policy(model=peft_model, is_lora=True, base_dir=Path(model_dir))
    model.train()
    ref = None
    if need_reference:
        ref = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype)
        ref.eval()
        ref.requires_grad_(False)
    return Policy(model=model, is_lora=False, reference=ref, base_dir=Path(model_dir))


def resolve_target_modules(model: torch.nn.Module, targets: list[str] | str) -> list[str] | str:
    """Turn "all-linear" (alone or in a list, e.g. ["all-linear", "lm_head"])
    into the short names of the model's linear layers other than the output
    head (q_proj, k_proj, …), so that the saved adapter_config.json lists
    plain module names, as vLLM expects."""
    items = [targets] if isinstance(targets, str) else list(targets)
    if "all-linear" not in items:
        return targets
    names = {
        name.rsplit(".", 1)[-1]
        for name, mod in model.named_modules()
        if isinstance(mod, torch.nn.Linear) and not name.endswith("lm_head")
    }
    names.update(t for t in items if t != "all-linear")
    return sorted(names)


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]
