"""The math-verify scorer's process and the synthetic benchmark set."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from parley_tools import bench_synth, mathverify

REPO = Path(__file__).resolve().parents[2]
SYNTH = REPO / "eval" / "bench" / "testdata" / "synthetic"


def run_lines(lines: list[str]) -> tuple[int, list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    code = mathverify.run(io.StringIO("".join(line + "\n" for line in lines)), out, err)
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_mathverify_verdicts() -> None:
    pytest.importorskip("math_verify")
    pairs = [
        {"gold": "42", "response": "So \\boxed{\\frac{84}{2}}."},
        {"gold": "7", "response": "The answer is 8."},
        {"gold": "33", "response": "no number at all"},
    ]
    code, out, err = run_lines([json.dumps(p) for p in pairs])
    assert code == 0, err
    assert out[0]["math_verify"] == "0.9.0"
    assert [v["correct"] for v in out[1:]] == [True, False, False]
    assert out[1]["got"] == "\\frac{84}{2}" and out[3]["got"] == ""


def test_mathverify_bad_line() -> None:
    pytest.importorskip("math_verify")
    code, _, err = run_lines([json.dumps({"gold": "1", "response": "1"}), "{not json", ""])
    assert code == mathverify.EXIT_BAD_INPUT
    assert "stdin line 2" in err


def test_mathverify_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "math_verify", None)  # import math_verify raises ImportError
    code, out, err = run_lines([])
    assert code == mathverify.EXIT_MISSING and out == []
    assert "lacks the math-verify package" in err and "make venv" in err


def test_synthetic_set_is_the_generators(tmp_path: Path) -> None:
    """The committed set is what `bench_synth generate` writes (nothing edited by hand)."""
    bench_synth.generate(tmp_path)
    for name in ("gpqa.csv", "gpqa-responses.jsonl", "aime.jsonl", "aime-responses.jsonl"):
        assert (tmp_path / name).read_bytes() == (SYNTH / name).read_bytes(), name
    responses = bench_synth.read_jsonl(tmp_path / "gpqa-responses.jsonl")
    assert len(responses) == 304 == len(bench_synth.read_jsonl(tmp_path / "aime-responses.jsonl"))
    assert {r["template"] for r in responses} == {f"gpqa-{t:02d}" for t in range(len(bench_synth.GPQA_TEMPLATES))}


def test_shuffle_matches_parley() -> None:
    """bench_synth's shuffle is parley's ShuffleGPQA: a permutation, the correct answer's letter."""
    seen = set()
    for run in range(24):
        choices, letter = bench_synth.shuffle_gpqa("recX", "right", ["w1", "w2", "w3"], 0, run)
        assert sorted(choices) == ["right", "w1", "w2", "w3"]
        assert choices["ABCD".index(letter)] == "right"
        seen.add(tuple(choices))
    assert len(seen) > 1
