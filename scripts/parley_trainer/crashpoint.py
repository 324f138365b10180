"""Crash points for the trainer's fault tests (the Go side's
internal/crashpoint): a point kills its process with SIGKILL, as a real
crash, only when the environment variable PARLEY_CRASH_AT names it, so it
does nothing in a normal run.

    PARLEY_CRASH_AT=NAME[@RANK][:N]

fires at the N-th pass (default the first) through point NAME on rank RANK
(default every rank), and only in a torchrun group's first attempt
(TORCHELASTIC_RESTART_COUNT unset or 0), so the group torchrun restarts
runs on.
"""

from __future__ import annotations

import os
import signal

ENV_VAR = "PARLEY_CRASH_AT"

_hits: dict[str, int] = {}


def parse(spec: str) -> tuple[str, int | None, int]:
    """NAME[@RANK][:N] as (name, rank or None, n)."""
    rest, _, nth = spec.partition(":")
    name, _, rank = rest.partition("@")
    return name, int(rank) if rank else None, int(nth) if nth else 1


def hit(name: str, rank: int) -> None:
    """Count a pass through point name on rank; SIGKILL this process when
    PARLEY_CRASH_AT names this pass."""
    spec = os.environ.get(ENV_VAR, "")
    if not spec or os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        return
    want, want_rank, nth = parse(spec)
    if want != name or (want_rank is not None and want_rank != rank):
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == nth:
        os.kill(os.getpid(), signal.SIGKILL)
