"""Checkpoint pruning: the resume state (optimizer.pt, rng.pt, FSDP's
accelerate_state/) is kept in the newest checkpoints only, full weights by
--keep-weights, adapters always; the HTTP upload leaves the resume state
out."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from parley_trainer.checkpoint import (
    checkpoint_dir,
    done_payload,
    encode_done,
    find_resume,
    prune_states,
    write_checkpoint_tar,
)

# what a LoRA step under FSDP on 2 ranks writes (accelerate 1.15's
# save_state; on the tiny model accelerate_state/ is 2.98 MB, the adapter 69 KB)
FSDP_LORA = (
    "adapter_model.safetensors",
    "adapter_config.json",
    "rng.pt",
    "trainer_state.json",
    "accelerate_state/model.safetensors",
    "accelerate_state/optimizer.bin",
    "accelerate_state/random_states_0.pkl",
    "accelerate_state/random_states_1.pkl",
)
LORA = ("adapter_model.safetensors", "adapter_config.json", "optimizer.pt", "rng.pt", "trainer_state.json")
FULL_SHARDED = (
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "config.json",
    "tokenizer.json",
    "probe.json",
    "optimizer.pt",
    "rng.pt",
)
FULL_ONE = ("model.safetensors", "config.json", "probe.json", "optimizer.pt", "rng.pt")


def make_checkpoint(run: Path, step: int, files: tuple[str, ...], done: bool = True) -> Path:
    ckpt = checkpoint_dir(run, step)
    for name in files:
        p = ckpt / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * 10)
    if done:
        (ckpt / "DONE").write_bytes(encode_done(done_payload(step, step, step - 1, {}, str(ckpt))))
    return ckpt


def listing(ckpt: Path) -> set[str]:
    return {p.relative_to(ckpt).as_posix() for p in ckpt.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("name", "files", "keep", "keep_weights", "gone_from_old"),
    [
        ("lora", LORA, 2, 0, {"optimizer.pt", "rng.pt"}),
        (
            "fsdp lora: accelerate_state holds the whole model",
            FSDP_LORA,
            2,
            0,
            {"rng.pt", *(f for f in FSDP_LORA if f.startswith("accelerate_state/"))},
        ),
        ("full weights kept (keep_weights 0)", FULL_ONE, 2, 0, {"optimizer.pt", "rng.pt"}),
        ("full weights pruned", FULL_ONE, 2, 2, {"optimizer.pt", "rng.pt", "model.safetensors"}),
        (
            "sharded full weights pruned",
            FULL_SHARDED,
            2,
            2,
            {"optimizer.pt", "rng.pt", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"},
        ),
        ("keep 0 keeps all", FSDP_LORA, 0, 0, set()),
    ],
)
def test_prune_states(name: str, files: tuple[str, ...], keep: int, keep_weights: int, gone_from_old: set[str], tmp_path: Path) -> None:
    run = tmp_path / "run"
    for step in range(1, 6):
        make_checkpoint(run, step, files)
    unfinished = make_checkpoint(run, 6, files, done=False)  # a crash mid-save: not a checkpoint yet
    prune_states(run, keep, keep_weights)
    for step in range(1, 6):
        got = listing(checkpoint_dir(run, step))
        want = set(files) | {"DONE"}
        if keep > 0 and step <= 5 - keep:
            want -= gone_from_old
        assert got == want, f"{name}: step {step}"
        assert not [p.name for p in checkpoint_dir(run, step).iterdir() if p.name.startswith(".")], f"{name}: step {step} holds temporary folders"
    assert listing(unfinished) == set(files), f"{name}: the unfinished checkpoint was pruned"
    rp = find_resume(run)
    assert rp is not None and rp.step == 5 and listing(rp.path) == set(files) | {"DONE"}


def test_prune_removes_an_interrupted_prune(tmp_path: Path) -> None:
    """A crash between the rename of accelerate_state/ and its removal leaves
    .accelerate_state.tmp-pruned: the next prune removes it."""
    run = tmp_path / "run"
    for step in range(1, 4):
        make_checkpoint(run, step, FSDP_LORA)
    old = checkpoint_dir(run, 1)
    (old / "accelerate_state").rename(old / ".accelerate_state.tmp-pruned")
    prune_states(run, 2)
    assert sorted(p.name for p in old.iterdir()) == ["DONE", "adapter_config.json", "adapter_model.safetensors", "trainer_state.json"]


def test_upload_tar_leaves_out_resume_state(tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "run", 1, FSDP_LORA + ("optimizer.pt",))
    out = tmp_path / "up.tar"
    write_checkpoint_tar(ckpt, {"step": 1}, out)
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert names == ["adapter_config.json", "adapter_model.safetensors", "trainer_state.json", "DONE"]


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (["--keep-weights", "2"], "--keep-weights is for --full-finetune"),
        (["--keep-weights", "-1"], "--keep-weights must be 0 (all)"),
        (["--keep-optimizer-states", "-1"], "--keep-optimizer-states must be 0 (all)"),
        (["--full-finetune", "--keep-weights", "2", "--keep-optimizer-states", "1"], None),
    ],
)
def test_keep_flags(flags: list[str], error: str | None) -> None:
    from parley_trainer.config import build_parser, config_from_args

    a = build_parser().parse_args(["--run-dir", "run", "--model", "m", *flags])
    if error is None:
        cfg = config_from_args(a)
        assert (cfg.keep_optimizer_states, cfg.keep_weights) == (1, 2)
        return
    with pytest.raises(SystemExit, match=re.escape(error)):
        config_from_args(a)
