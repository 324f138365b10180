"""The Python judge's worker (parley_tools.reward_worker) on the example rewards."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from parley_tools import reward_worker, rewards_example

SCRIPTS = Path(__file__).resolve().parents[1]


def rollout(final: str, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"id": "r1", "final": final, "roles": ["A", "B"], "messages": []}
    r.update(kw)
    return r


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (0.5, {"score": 0.5}),
        (3, {"score": 3.0}),
        ({"A": 1, "B": 0.25}, {"roles": {"A": 1.0, "B": 0.25}}),
    ],
)
def test_result_scores(value: Any, want: dict[str, Any]) -> None:
    assert reward_worker.result(value) == want


@pytest.mark.parametrize("value", ["five", None, True, float("nan"), float("inf"), {}, {"A": "x"}, {1: 0.5}, [0.5]])
def test_result_refuses(value: Any) -> None:
    got = reward_worker.result(value)
    assert set(got) == {"error"}, got
    assert "returned" in got["error"]


def test_call_exception_has_traceback() -> None:
    got = reward_worker.call(rewards_example.raises, rollout("boom"))
    assert got["error"] == "ValueError: the final says boom"
    assert "Traceback (most recent call last)" in got["traceback"]
    assert "rewards_example.py" in got["traceback"]


def test_serve_batches() -> None:
    lines = io.StringIO(
        json.dumps({"id": 1, "rollouts": [rollout("calm"), rollout("boom")]})
        + "\n\nnot json\n"
        + json.dumps({"id": 2, "rollouts": []})
        + "\n"
    )
    out = io.StringIO()
    reward_worker.serve(rewards_example.raises, lines, out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert replies[0]["id"] == 1
    assert replies[0]["results"][0] == {"score": 1.0}
    assert "ValueError" in replies[0]["results"][1]["error"]
    assert replies[1]["id"] is None and "bad batch line" in replies[1]["error"]
    assert replies[2] == {"id": 2, "results": []}


def test_examples() -> None:
    words = " ".join(["together", "share", "fair"] + ["w"] * 37)
    assert rewards_example.keyword_length(rollout(words)) == pytest.approx(1.0)
    assert rewards_example.keyword_length(rollout("")) == 0.0
    msgs = [{"role": "assistant", "name": "A", "content": "a b c"}, {"role": "assistant", "name": "B", "content": "d"}, {"role": "user", "name": None, "content": "x y"}]
    assert rewards_example.per_role_length(rollout("", messages=msgs)) == {"A": 0.75, "B": 0.25}


@pytest.mark.parametrize(("spec", "want"), [("nomodule", "not module:function"), ("parley_tools.rewards_example:nope", "AttributeError"), ("parley_tools.rewards_example:KEYWORDS", "not a function")])
def test_load_refuses(spec: str, want: str) -> None:
    with pytest.raises((ValueError, AttributeError, TypeError), match=want if want != "AttributeError" else "nope"):
        reward_worker.load(spec)


def worker(function: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(SCRIPTS))
    return subprocess.Popen(
        [sys.executable, "-m", "parley_tools.reward_worker", "--function", function],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def test_process_protocol(tmp_path: Path) -> None:
    """The process: its ready line, a batch's reply, prints kept off stdout, exit at EOF."""
    (tmp_path / "printing.py").write_text("def score(r):\n    print('hello', r['id'])\n    return 0.5\n")
    env = dict(os.environ, PYTHONPATH=str(SCRIPTS))
    p = subprocess.run(
        [sys.executable, "-m", "parley_tools.reward_worker", "--function", "printing:score", "--path", str(tmp_path)],
        input=json.dumps({"id": 7, "rollouts": [rollout("x")]}) + "\n", capture_output=True, text=True, env=env, timeout=60, check=True,
    )
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert lines[0]["ready"] is True and lines[0]["function"] == "printing:score"
    assert lines[1] == {"id": 7, "results": [{"score": 0.5}]}
    assert "hello r1" in p.stderr


def test_process_import_error() -> None:
    p = worker("no_such_module:f")
    out, _ = p.communicate(timeout=60)
    assert p.returncode == reward_worker.EXIT_IMPORT
    head = json.loads(out.splitlines()[0])
    assert head["ready"] is False and "ModuleNotFoundError" in head["error"] and "Traceback" in head["traceback"]
