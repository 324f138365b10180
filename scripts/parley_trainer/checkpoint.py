"""Checkpoints in RUN/checkpoints/step-%06d/: the adapter (or full weights),
the optimizer state, the RNG state, then DONE, written atomically and last.

A step whose checkpoint has DONE is finished: it is never trained again, and
a restarted trainer resumes from the newest such checkpoint.
"""

from __future__ import annotations

import io
import json
import math
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import commit_dir, make_temp_dir, remove_temp_dirs, write_atomic

DONE_FILE = "DONE"
OPTIMIZER_FILE = "optimizer.pt"
RNG_FILE = "rng.pt"
STATE_FILE = "trainer_state.json"
# Trainer-local files: kept for exact resume, not uploaded in HTTP mode.
LOCAL_ONLY = {OPTIMIZER_FILE, RNG_FILE}

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


def prune_optimizer_states(run_dir: str | Path, keep: int) -> None:
    """Delete optimizer.pt and rng.pt from all but the newest keep finished
    checkpoints (adapters are kept: the inference server may reload them)."""
    if keep <= 0:
        return
    root = checkpoints_dir(run_dir)
    if not root.is_dir():
        return
    steps = sorted(n for e in root.iterdir() if (n := parse_step_name(e.name)) is not None and read_done(e) is not None)
    for n in steps[:-keep]:
        for name in LOCAL_ONLY:
            p = checkpoint_dir(run_dir, n) / name
            if p.exists():
                p.unlink()


def write_checkpoint_tar(ckpt: Path, done: dict[str, Any], out: Path) -> int:
    """Write an uncompressed tar of a checkpoint for the HTTP handshake to
    out: every file but the trainer-local ones, then DONE (holding `done`)
    last. Returns its size in bytes."""
    with tarfile.open(str(out), mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(ckpt.rglob("*")):
            rel = path.relative_to(ckpt).as_posix()
            if path.is_dir() or rel in LOCAL_ONLY or rel == DONE_FILE:
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
