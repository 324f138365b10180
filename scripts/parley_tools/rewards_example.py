"""Example reward functions for parley's Python judge (`judge.kind: python`).

    judge:
      kind: python
      python:
        function: parley_tools.rewards_example:keyword_length

Each takes one rollout, a dict with the keys of `parley export --format
jsonl` (id, task, messages, final, agreed, personas, ...) plus "roles" (its
roles' names), and returns a score in the judge's range (judge.python.min
to judge.python.max, 0 to 1 by default) or a dict of role name to score.
The last four exist for parley's tests of the judge's failures.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

KEYWORDS = ("together", "share", "fair")
TARGET_WORDS = 40


def keyword_length(rollout: dict[str, Any]) -> float:
    """Half the share of KEYWORDS in the final completion, half its closeness to TARGET_WORDS words."""
    final = str(rollout.get("final") or "")
    words = re.findall(r"[\w']+", final.lower())
    present = sum(1 for k in KEYWORDS if k in words) / len(KEYWORDS)
    closeness = max(0.0, 1.0 - abs(len(words) - TARGET_WORDS) / TARGET_WORDS)
    return 0.5 * present + 0.5 * closeness


def per_role_length(rollout: dict[str, Any]) -> dict[str, float]:
    """Each role's score: its share of the dialogue's assistant words (roles that did not speak get 0)."""
    counts: dict[str, int] = dict.fromkeys(rollout.get("roles") or [], 0)
    for m in rollout.get("messages") or []:
        if m.get("role") == "assistant" and m.get("name") in counts:
            counts[m["name"]] += len(str(m.get("content") or "").split())
    total = sum(counts.values())
    return {role: (n / total if total else 0.0) for role, n in counts.items()}


def raises(rollout: dict[str, Any]) -> float:
    """Raises on every rollout whose final mentions "boom", else scores 1."""
    if "boom" in str(rollout.get("final") or ""):
        raise ValueError("the final says boom")
    return 1.0


def sleeps(rollout: dict[str, Any]) -> float:
    """Sleeps a minute when the final mentions "sleep": a function that hangs."""
    if "sleep" in str(rollout.get("final") or ""):
        time.sleep(60)
    return 1.0


def exits(rollout: dict[str, Any]) -> float:
    """Kills its process when the final mentions "exit": a worker that dies."""
    if "exit" in str(rollout.get("final") or ""):
        os._exit(3)
    return 1.0


def bad_value(rollout: dict[str, Any]) -> Any:
    """Returns a string, which is no score."""
    return "five"
