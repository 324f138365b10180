"""Step metrics in TensorBoard and W&B (--report-to, config trainer.report_to):
the trainer's under trainer/, parley's (the step's sidecar) under parley/,
at the batch's step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from helpers import load_model, make_rows, read_tensorboard
from parley_trainer.batch import write_batch
from parley_trainer.checkpoint import read_done
from parley_trainer.handshake import sidecar_path
from parley_trainer.reporting import ReportError, flatten, open_reporters, parse_report_to, step_evals, step_scalars
from parley_trainer.train import main

REPO = Path(__file__).resolve().parents[2]
COMMON = ["--lr", "1e-3", "--lora-r", "4", "--lora-alpha", "8", "--poll-interval", "0.05", "--quiet"]
SECRET = "wandb-test-secret-9f2c41"


@pytest.fixture(scope="module")
def rows_model(tiny_model):
    return load_model(tiny_model)


def parley_metrics(step: int) -> dict[str, Any]:
    """A sidecar's metrics as train.Loop writes them (a subset)."""
    return {
        "step": step,
        "policy_version": step - 1,
        "reward_mean": 0.125 * step,
        "reward_std": 0.5,
        "score_min": 0.0,
        "score_mean": 0.25 * step,
        "score_max": 1.0,
        "agreement_rate": 0.5 + 0.125 * step,
        "rounds_to_agreement": 1.5,
        "prefix_breaks": step - 1,
        "rollouts": 32,
        "sample_seconds": 2.5,
        "judge_seconds": 0.01,
        "reward_mean/A": 0.1,
        "sample_metrics_lost": False,
        "note": "strings are not scalars",
    }


def write_step(run: Path, step: int, model, sidecar: bool = True) -> None:
    if sidecar:
        p = sidecar_path(run, step)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"metrics": parley_metrics(step), "role_baseline": None}))
    write_batch(str(run), step, step - 1, make_rows(model, 6, model.config.vocab_size, seed=100 + step))


class FakeWandb:
    """A stand-in for the wandb module: records init, log and finish."""

    def __init__(self) -> None:
        self.inits: list[dict[str, Any]] = []
        self.logged: list[tuple[int, dict[str, float]]] = []
        self.finished = 0
        self.defined: list[tuple[str, str | None]] = []

    def module(self) -> types.ModuleType:
        m = types.ModuleType("wandb")
        fake = self

        class Run:
            def log(self, data: dict[str, float], step: int | None = None) -> None:
                assert step is not None, "log without step"
                fake.logged.append((step, dict(data)))

            def finish(self) -> None:
                fake.finished += 1

            def define_metric(self, name: str, step_metric: str | None = None) -> None:
                fake.defined.append((name, step_metric))

        def init(**kw: Any) -> Run:
            fake.inits.append(kw)
            return Run()

        m.init = init  # type: ignore[attr-defined]
        return m


@pytest.mark.parametrize(
    "values,want",
    [
        (["tensorboard"], ("tensorboard",)),
        (["wandb"], ("wandb",)),
        (["tensorboard,wandb"], ("tensorboard", "wandb")),
        (["tensorboard", "wandb"], ("tensorboard", "wandb")),
        ([" wandb , tensorboard "], ("wandb", "tensorboard")),
        (["none"], ()),
    ],
)
def test_parse_report_to(values, want):
    assert parse_report_to(values) == want


@pytest.mark.parametrize(
    "values,says",
    [
        (["mlflow"], "'mlflow' is not one of tensorboard, wandb, none"),
        (["none,wandb"], "none cannot be combined with wandb"),
        (["wandb", "wandb"], "names a target twice"),
        ([""], "is empty"),
    ],
)
def test_parse_report_to_refuses(values, says):
    with pytest.raises(ReportError, match="trainer.report_to") as e:
        parse_report_to(values)
    assert says in str(e.value)


def test_step_scalars_prefixes_and_types():
    got = step_scalars({"loss": 0.5, "empty_batch": 1}, {"step": 3, "reward_mean": 0.25, "ok": True, "game": {"deals": 2}, "name": "x"})
    assert got == {"trainer/loss": 0.5, "trainer/empty_batch": 1.0, "parley/reward_mean": 0.25, "parley/ok": 1.0, "parley/game/deals": 2.0}
    assert step_scalars({"loss": 1.0}, None) == {"trainer/loss": 1.0}
    assert flatten({"a": None, "b": [1, 2]}, "p/") == {}


def test_tensorboard_and_wandb_get_the_same_scalars(tiny_model, rows_model, tmp_path, monkeypatch, capsys):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake.module())
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    for k in ("WANDB_DIR", "WANDB_PROJECT", "WANDB_NAME", "WANDB_RUN_ID"):
        monkeypatch.delenv(k, raising=False)
    run = tmp_path / "myrun"
    write_step(run, 1, rows_model)
    write_step(run, 2, rows_model)
    argv = ["--run-dir", str(run), "--model", str(tiny_model), "--max-steps", "2", "--report-to", "tensorboard", "wandb", *COMMON]
    assert main(argv) == 0

    tb = read_tensorboard(run / "tensorboard")
    for step in (1, 2):
        done = read_done(run / "checkpoints" / f"step-{step:06d}")
        assert done is not None
        loss = dict(tb["trainer/loss"])[step]
        assert loss == pytest.approx(done["metrics"]["loss"], rel=1e-6, abs=1e-7)
        assert dict(tb["trainer/grad_norm"])[step] == pytest.approx(done["metrics"]["grad_norm"], rel=1e-6)
        want = parley_metrics(step)
        assert dict(tb["parley/reward_mean"])[step] == pytest.approx(want["reward_mean"])
        assert dict(tb["parley/agreement_rate"])[step] == pytest.approx(want["agreement_rate"])
        assert dict(tb["parley/prefix_breaks"])[step] == want["prefix_breaks"]
    assert [s for s, _ in tb["trainer/loss"]] == [1, 2]
    for tag in ("trainer/approx_kl", "trainer/entropy", "trainer/clip_frac", "trainer/mismatch_k3_kl", "trainer/step_seconds",
                "parley/sample_seconds", "parley/rounds_to_agreement", "parley/reward_mean/A"):
        assert tag in tb, f"{tag} not in {sorted(tb)}"
    assert "parley/step" not in tb and "parley/note" not in tb

    # W&B got the very same scalars at the same steps, one log call a step.
    assert [s for s, _ in fake.logged] == [1, 2]
    for step, data in fake.logged:
        assert set(data) == {t for t, pts in tb.items() if any(s == step for s, _ in pts)}
        for tag, value in data.items():
            assert dict(tb[tag])[step] == pytest.approx(value, rel=1e-6, abs=1e-7), tag
    (init,) = fake.inits
    assert init["project"] == "parley" and init["name"] == "myrun" and init["resume"] == "allow"
    assert init["dir"] == str(run) and init["config"]["lr"] == 1e-3 and init["config"]["report_to"] == ("tensorboard", "wandb")
    assert fake.finished == 1
    run_id = init["id"]

    # A restarted trainer resumes the same W&B run and adds step 3.
    write_step(run, 3, rows_model)
    assert main([*argv[:5], "1", *argv[6:]]) == 0
    assert fake.inits[1]["id"] == run_id
    assert [s for s, _ in fake.logged] == [1, 2, 3]
    assert [s for s, _ in read_tensorboard(run / "tensorboard")["parley/reward_mean"]] == [1, 2, 3]

    # The key is wandb's business: it is in no file of the run, nor the output.
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    for f in run.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_missing_sidecar_reports_trainer_metrics_only(tiny_model, rows_model, tmp_path):
    run = tmp_path / "run"
    write_step(run, 1, rows_model, sidecar=False)
    assert main(["--run-dir", str(run), "--model", str(tiny_model), "--max-steps", "1", *COMMON]) == 0
    tb = read_tensorboard(run / "tensorboard")
    assert [s for s, _ in tb["trainer/loss"]] == [1]
    assert not [t for t in tb if t.startswith("parley/")]


def test_report_to_none_writes_nothing(tiny_model, rows_model, tmp_path, monkeypatch):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake.module())
    run = tmp_path / "run"
    write_step(run, 1, rows_model)
    before = {p.relative_to(run) for p in run.rglob("*")}
    assert main(["--run-dir", str(run), "--model", str(tiny_model), "--max-steps", "1", "--report-to", "none", *COMMON]) == 0
    added = {p.relative_to(run) for p in run.rglob("*")} - before
    assert added and all(p.parts[0] in ("checkpoints", "trainer.log") for p in added), sorted(map(str, added))
    assert not fake.inits and not fake.logged


def test_missing_wandb_fails_at_start_naming_the_key(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    run = tmp_path / "run"
    rc = main(["--run-dir", str(run), "--model", str(tiny_model), "--report-to", "tensorboard,wandb", *COMMON])
    assert rc == 2
    err = capsys.readouterr().err
    assert "trainer.report_to (--report-to) includes wandb, but the wandb package is not installed" in err
    assert "pip install wandb" in err
    assert not run.exists(), "the trainer did work before refusing"


def test_bad_report_to_is_refused(tiny_model, tmp_path):
    with pytest.raises(SystemExit, match=r"trainer\.report_to \(--report-to\): 'tensorbord' is not one of"):
        main(["--run-dir", str(tmp_path / "run"), "--model", str(tiny_model), "--report-to", "tensorbord"])


FAKE_WANDB_FILE = """
import json, os

def _rec(**kw):
    with open(os.environ["FAKE_WANDB_LOG"], "a") as f:
        f.write(json.dumps(kw) + "\\n")

class _Run:
    def log(self, data, step=None):
        _rec(call="log", step=step)
    def finish(self):
        _rec(call="finish")

def init(**kw):
    _rec(call="init", key_in_env="WANDB_API_KEY" in os.environ)
    return _Run()
"""


def test_sigterm_finishes_the_wandb_run(tiny_model, rows_model, tmp_path):
    """parley stops its trainer with SIGTERM: the trainer exits through its
    finally blocks, so W&B gets finish() (else the run shows as crashed)."""
    fake = tmp_path / "fake" / "wandb"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_WANDB_FILE)
    calls = tmp_path / "calls.jsonl"
    run = tmp_path / "run"
    write_step(run, 1, rows_model)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fake.parent), str(REPO / "scripts"), os.environ.get("PYTHONPATH", "")]),
        "FAKE_WANDB_LOG": str(calls),
        "WANDB_API_KEY": SECRET,
        "PYTHONWARNINGS": "ignore",
    }
    p = subprocess.Popen(
        [sys.executable, "-m", "parley_trainer", "--run-dir", str(run), "--model", str(tiny_model), "--report-to", "wandb", *COMMON],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not (run / "checkpoints" / "step-000001" / "DONE").exists() or '"after": 1' not in _read(run / "trainer.log"):
            assert p.poll() is None, p.stderr.read() if p.stderr else ""
            assert time.monotonic() < deadline, "the trainer never trained step 1"
            time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 128 + signal.SIGTERM
    got = [json.loads(line) for line in calls.read_text().splitlines()]
    assert got == [{"call": "init", "key_in_env": True}, {"call": "log", "step": 1}, {"call": "finish"}]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def test_evals_reach_tensorboard_and_wandb(tmp_path, monkeypatch):
    """A held-out evaluation handed with a later step's metrics (the sidecar's
    "evals") is logged at its own step in TensorBoard (scalars and the sample
    dialogues as text) and in W&B against eval/step."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake.module())
    samples = "**prompt d031** (greedy, run 0): trained side's outcome 0.5\n\n- trained, 3 rounds: we agree\n- base, 3 rounds: no"
    metrics = {**parley_metrics(3), "evals": [{"step": 2, "metrics": {"eval/win_rate": 55.0, "eval/score_mean": 0.25}, "samples": samples}]}
    assert "parley/evals" not in step_scalars({}, metrics)
    evals = step_evals(metrics)
    assert [(e.step, e.scalars) for e in evals] == [(2, {"eval/win_rate": 55.0, "eval/score_mean": 0.25})]
    assert step_evals(parley_metrics(3)) == [] and step_evals(None) == [] and step_evals({"evals": [{"step": "2"}]}) == []

    reps = open_reporters(("tensorboard", "wandb"), tmp_path, None, {})
    reps.log(3, step_scalars({"loss": 1.0}, metrics))
    reps.log_eval(evals, 3)
    reps.close()

    tb = read_tensorboard(tmp_path / "tensorboard")
    assert tb["eval/win_rate"] == [(2, 55.0)] and tb["eval/score_mean"] == [(2, 0.25)]
    assert tb["parley/reward_mean"] == [(3, pytest.approx(0.375))]
    acc = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"tensors": 0})
    acc.Reload()
    (text,) = acc.Tensors("eval/samples/text_summary")
    assert text.step == 2 and text.tensor_proto.string_val[0].decode() == samples

    assert fake.logged[1] == (3, {"eval/win_rate": 55.0, "eval/score_mean": 0.25, "eval/step": 2, "eval/samples": samples})
    assert ("eval/*", "eval/step") in fake.defined
