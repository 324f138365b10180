"""Checkpoints in RUN/checkpoints/step-%06d/: the adapter (or full weights),
the optimizer state, the RNG state, then DONE, written atomically and last.

A step whose checkpoint has DONE is finished: it is never trained again, and
a restarted trainer resumes from the newest such checkpoint.

Resume state (optimizer.pt, rng.pt, and under FSDP accelerate_state/, which
holds the whole model and the optimizer) is kept in the newest
--keep-optimizer-states checkpoints only (prune_states); the adapter or the
full weights stay in every checkpoint (the server and parley eval load them),
unless --keep-weights bounds the full weights too.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import commit_dir, fsync_dir, make_temp_dir, remove_temp_dirs, temp_prefix, write_atomic

DONE_FILE = "DONE"
OPTIMIZER_FILE = "optimizer.pt"
RNG_FILE = "rng.pt"
STATE_FILE = "trainer_state.json"
# accelerate's save_state folder (FSDP): the model and the optimizer, sharded
ACCELERATE_STATE_DIR = "accelerate_state"
# Trainer-local resume state: kept for exact resume in the newest
# checkpoints only (prune_states), not uploaded in HTTP mode.
LOCAL_ONLY = {OPTIMIZER_FILE, RNG_FILE, ACCELERATE_STATE_DIR}
# full fine-tuning's weights (save_pretrained: one file, or shards and
# their index), pruned by --keep-weights
WEIGHTS_RE = re.compile(r"^model(-\d+-of-\d+)?\.safetensors(\.index\.json)?$")

_STEP_RE = re.compile(r"^step-(\d{6,9})$")


def step_name(step: int) -> str:
    return f"step-{step:06d}"


def parse_step_name(name: str) -> int | None:
    """Parse step-N as written by step_name (no extra leading zeros)."""
    m = _STEP_RE.match(name)
    if not m:
        return None
    n = int(m.group(1))
    return n if step_name(n) == name else None


def checkpoints_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "checkpoints"


def checkpoint_dir(run_dir: str | Path, step: int) -> Path:
    return checkpoints_dir(run_dir) / step_name(step)


def finite_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """The metrics that are finite numbers (DONE must hold no NaN or Inf)."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if math.isfinite(float(v)):
            out[k] = float(v)
    return out


def done_payload(step: int, policy_version: int, batch_policy_version: int, metrics: dict[str, Any], adapter_path: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "step": step,
        "policy_version": policy_version,
        "batch_policy_version": batch_policy_version,
        "metrics": finite_metrics(metrics),
    }
    if adapter_path:
        d["adapter_path"] = adapter_path
    return d


def encode_done(payload: dict[str, Any]) -> bytes:
    return (json.dumps(payload, allow_nan=False, sort_keys=True) + "\n").encode()


def read_done(ckpt: Path) -> dict[str, Any] | None:
    """The DONE marker of a checkpoint folder, or None when it has none or it
    does not parse or names another step."""
    try:
        data = json.loads((ckpt / DONE_FILE).read_bytes())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("step"), int):
        return None
    n = parse_step_name(ckpt.name)
    if n is not None and n != data["step"]:
        return None
    return data


def is_done(run_dir: str | Path, step: int) -> bool:
    return read_done(checkpoint_dir(run_dir, step)) is not None


@dataclass(frozen=True)
class ResumePoint:
    step: int
    path: Path
    done: dict[str, Any]


def find_resume(run_dir: str | Path) -> ResumePoint | None:
    """The newest checkpoint with a valid DONE, or None."""
    root = checkpoints_dir(run_dir)
    if not root.is_dir():
        return None
    best: ResumePoint | None = None
    for entry in root.iterdir():
        n = parse_step_name(entry.name)
        if n is None or not entry.is_dir():
            continue
        if best is not None and n <= best.step:
            continue
        done = read_done(entry)
        if done is not None:
            best = ResumePoint(step=n, path=entry, done=done)
    return best


def begin_checkpoint(run_dir: str | Path, step: int) -> Path:
    """Create an empty temporary folder for step's checkpoint, beside its
    final place (atomic.make_temp_dir: checkpoints/.step-N.tmp-*), after
    removing those an interrupted save of the step left."""
    final = checkpoint_dir(run_dir, step)
    remove_temp_dirs(final)
    return make_temp_dir(final)


def commit_checkpoint(run_dir: str | Path, step: int, tmp: Path, done: dict[str, Any]) -> Path:
    """Move a filled temporary folder into place, then write DONE there
    atomically. A leftover folder of the same step without DONE (a crash
    mid-save) is replaced."""
    final = checkpoint_dir(run_dir, step)
    if final.exists() and read_done(final) is not None:
        raise RuntimeError(f"checkpoint {final} already has DONE; a finished step is never trained twice")
    commit_dir(tmp, final)
    write_atomic(final / DONE_FILE, encode_done(done))
    return final


def remove_atomic(path: Path) -> None:
    """Remove a file, or a folder as a whole: the folder is first renamed to
    a temporary name beside it (atomic.temp_prefix, which parley's and the
    next prune's clean-up of temporary folders remove), so that a crash
    mid-removal leaves either the whole folder or none of it under its name."""
    if path.is_dir() and not path.is_symlink():
        gone = path.with_name(temp_prefix(path.name) + "pruned")
        if gone.exists():
            shutil.rmtree(gone)
        os.replace(path, gone)
        fsync_dir(path.parent)
        shutil.rmtree(gone)
    else:
        path.unlink(missing_ok=True)


def finished_steps(run_dir: str | Path) -> list[int]:
    """The steps whose checkpoint has a valid DONE, oldest first."""
    root = checkpoints_dir(run_dir)
    if not root.is_dir():
        return []
    return sorted(n for e in root.iterdir() if (n := parse_step_name(e.name)) is not None and read_done(e) is not None)


def prune_states(run_dir: str | Path, keep: int, keep_weights: int = 0) -> list[Path]:
    """Remove the resume state (LOCAL_ONLY: optimizer.pt, rng.pt,
    accelerate_state/) from all but the newest keep finished checkpoints,
    and full fine-tuning's weights (WEIGHTS_RE) from all but the newest
    keep_weights; 0 keeps them all. Adapters are kept: the inference server
    and the league may load any of them. Each folder goes at once
    (remove_atomic); a resume reads only the newest checkpoint, which is
    always kept. Returns the paths removed."""
    removed: list[Path] = []
    steps = finished_steps(run_dir)
    for limit, weights in ((keep, False), (keep_weights, True)):
        if limit <= 0:
            continue
        for n in steps[:-limit]:
            ckpt = checkpoint_dir(run_dir, n)
            remove_temp_dirs(ckpt / ACCELERATE_STATE_DIR)  # an interrupted prune's
            for p in sorted(ckpt.iterdir()):
                if (WEIGHTS_RE.match(p.name) is not None) if weights else (p.name in LOCAL_ONLY):
                    remove_atomic(p)
                    removed.append(p)
    return removed


def write_checkpoint_tar(ckpt: Path, done: dict[str, Any], out: Path) -> int:
    """Write an uncompressed tar of a checkpoint for the HTTP handshake to
    out: every file but the trainer-local ones, then DONE (holding `done`)
    last. Returns its size in bytes."""
    with tarfile.open(str(out), mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(ckpt.rglob("*")):
            rel = path.relative_to(ckpt).as_posix()
            if path.is_dir() or rel.split("/")[0] in LOCAL_ONLY or rel == DONE_FILE:
                continue
            if not path.is_file():
                continue
            info = tar.gettarinfo(str(path), arcname=rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o644
            with open(path, "rb") as f:
                tar.addfile(info, f)
        data = encode_done(done)
        info = tarfile.TarInfo(DONE_FILE)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    return out.stat().st_size
