"""The worker of parley's Python judge (`judge.kind: python`): a reward
function, named "module:function", called on batches of rollouts over JSON
lines.

    python -m parley_tools.reward_worker --function my_rewards:score [--path DIR]...

parley starts one worker per judge and keeps it for the run. The protocol, one
JSON object a line:

- the worker's first stdout line is {"ready": true, "function": ..., "python": ...}
  once the function is imported, or {"ready": false, "error": ..., "traceback": ...}
  (then it exits 2);
- each stdin line is a batch, {"id": N, "rollouts": [ROLLOUT, ...]}, each ROLLOUT
  the rollout as `parley export --format jsonl` writes it (its keys: id,
  messages, final, personas, agreed, ...) plus "roles", the names of its roles;
- each reply is {"id": N, "results": [RESULT, ...]}, one per rollout in order:
  {"score": x}, {"roles": {role: x, ...}} or, when the call raised or returned
  something else, {"error": "...", "traceback": "..."}.

The function takes one rollout (a dict) and returns a number (its score) or a
dict of role name to number (per-role scores). What it prints goes to the
worker's stderr, which parley logs: stdout carries only the protocol. The
worker exits when stdin closes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import numbers
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

EXIT_IMPORT = 2

RewardFunction = Callable[[dict[str, Any]], Any]


def load(spec: str) -> RewardFunction:
    """The function that spec ("module:function", the function may be dotted) names."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"function {spec!r} is not module:function")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec} is a {type(obj).__name__}, not a function")
    fn: RewardFunction = obj
    return fn


def number(v: Any) -> float | None:
    """v as a finite float, or None when it is not a real number (a bool is not one; numpy's and torch's scalars are)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def result(value: Any) -> dict[str, Any]:
    """The reply for one returned value: a score, per-role scores, or an error naming what came back."""
    f = number(value)
    if f is not None:
        return {"score": f}
    if isinstance(value, dict) and value:
        roles: dict[str, float] = {}
        for k, v in value.items():
            rf = number(v)
            if not isinstance(k, str) or rf is None:
                return {"error": f"returned a dict whose entry {k!r}: {v!r} is not role name: finite number"}
            roles[k] = rf
        return {"roles": roles}
    return {"error": f"returned {value!r:.200} ({type(value).__name__}); want a finite number or a dict of role name to number"}


def call(fn: RewardFunction, rollout: dict[str, Any]) -> dict[str, Any]:
    """fn on one rollout; an exception becomes an error with its traceback."""
    try:
        value = fn(rollout)
    except Exception as e:  # noqa: BLE001 - every failure of the user's function is the rollout's judge error
        return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    return result(value)


def serve(fn: RewardFunction, lines: TextIO, out: TextIO) -> None:
    """Answers every batch line of lines on out, until lines ends."""
    for line in lines:
        if not line.strip():
            continue
        try:
            batch = json.loads(line)
            rollouts = batch["rollouts"]
            ident = batch["id"]
        except (ValueError, KeyError, TypeError) as e:
            out.write(json.dumps({"id": None, "error": f"bad batch line: {e}"}) + "\n")
            out.flush()
            continue
        results = [call(fn, r) for r in rollouts]
        out.write(json.dumps({"id": ident, "results": results}) + "\n")
        out.flush()


def protocol_stream() -> TextIO:
    """A private copy of stdout for the protocol; stdout itself (fd 1, and
    sys.stdout) then goes to stderr, so that a function's prints, also a C
    library's, never corrupt the protocol."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parley_tools.reward_worker", description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--function", required=True, help="the reward function, module:function")
    ap.add_argument("--path", action="append", default=[], help="a directory added to sys.path (repeatable)")
    args = ap.parse_args(argv)
    out = protocol_stream()
    for p in reversed(args.path):
        sys.path.insert(0, p)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        fn = load(args.function)
    except Exception as e:  # noqa: BLE001 - any import failure is reported the same way
        out.write(json.dumps({"ready": False, "error": f"{args.function}: {type(e).__name__}: {e}", "traceback": traceback.format_exc()}) + "\n")
        out.flush()
        return EXIT_IMPORT
    out.write(json.dumps({"ready": True, "function": args.function, "python": sys.version.split()[0]}) + "\n")
    out.flush()
    serve(fn, sys.stdin, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
