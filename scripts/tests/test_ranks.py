"""The trainer under torchrun: two ranks on CPU (gloo), DDP and --fsdp, on
the tiny model, against one rank on the same batches; a rank killed
mid-step (the group restarts, the step is trained once); ranks that read
different run directories (refused, naming both).

Tolerance, measured on these batches (7 rows, micro-batches of 64 tokens,
so the two ranks get uneven shares and one runs a zero-weight dummy):
metrics differ by at most 3.5e-7 relative, the adapter tensors by at most
4.2e-7 absolute (their largest entry is 0.09); the asserts allow 1e-5
relative + 1e-8 absolute on metrics and 1e-5 relative + 1e-6 absolute on
tensors. kl_ref is ~1.2e-5 here, a mean of differences of nearly equal
logprobs: the two ranks' order of summation moves it by ~1.4e-9 (1.2e-4
relative, measured on one machine), which the absolute 1e-8 allows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from helpers import load_model, make_rows
from parley_trainer.batch import write_batch
from parley_trainer.checkpoint import read_done
from parley_trainer.train import RankMismatchError, check_ranks_agree, main

STEPS = 3
ARGS = [
    "--mode", "file", "--max-steps", str(STEPS), "--lr", "1e-3", "--lora-r", "4", "--lora-alpha", "8",
    "--beta", "0.05", "--micro-batch-tokens", "64", "--poll-interval", "0.05", "--threads", "1",
    "--report-to", "none", "--quiet",
]  # fmt: skip
# the metrics that must match one rank's (counts, means, norms)
METRICS = ("loss", "approx_kl", "kl_ref", "grad_norm", "entropy", "logprob_mean", "clip_frac", "ratio_mean", "sequences", "tokens", "masked_tokens")
# a torchrun run must end well within this (it takes ~40 s on 2 busy cores)
TIMEOUT = 300


def _steps(run: Path) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, (run / "trainer.log").read_text().splitlines()) if e["event"] == "step"]


def _adapter(run: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(run / "checkpoints" / f"step-{step:06d}" / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def batches(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory holding STEPS batches (off-policy rows: clipping and
    KL are not trivially zero)."""
    run = tmp_path_factory.mktemp("batches") / "run"
    model = load_model(tiny_model)
    for step in range(1, STEPS + 1):
        write_batch(str(run), step, step - 1, make_rows(model, 7, model.config.vocab_size, seed=10 + step, on_policy=False))
    return run


def _copy(batches: Path, to: Path) -> Path:
    shutil.copytree(batches, to)
    return to


@pytest.fixture(scope="module")
def one_rank(tiny_model: Path, batches: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-rank run over the batches (in this process)."""
    run = _copy(batches, tmp_path_factory.mktemp("one") / "run")
    assert main(["--run-dir", str(run), "--model", str(tiny_model), *ARGS]) == 0
    return run


def torchrun(args: list[str], env: dict[str, str] | None = None, no_python: bool = False, launcher: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """torchrun --standalone --nproc-per-node 2 (rendezvous on loopback)
    [launcher flags] -m parley_trainer args, or the command args with
    no_python."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *(launcher or [])]
    if no_python:
        cmd.append("--no-python")
    else:
        cmd += ["-m", "parley_trainer"]
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(cmd + args, env=full_env, capture_output=True, text=True, timeout=TIMEOUT)


def assert_same_as_one_rank(run: Path, one: Path) -> None:
    got, want = _steps(run), _steps(one)
    assert [e["step"] for e in got] == [e["step"] for e in want] == list(range(1, STEPS + 1))
    for g, w in zip(got, want):
        for k in METRICS:
            assert g[k] == pytest.approx(w[k], rel=1e-5, abs=1e-8), f"step {g['step']} {k}: {g[k]} with 2 ranks, {w[k]} with 1"
    for step in range(1, STEPS + 1):
        a, b = _adapter(run, step), _adapter(one, step)
        assert a.keys() == b.keys() and a
        for name in a:
            torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6, msg=lambda m, n=name, s=step: f"step {s} {n}: {m}")
        assert read_done(run / "checkpoints" / f"step-{step:06d}")["step"] == step


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_ranks_match_one(mode: str, tiny_model: Path, batches: Path, one_rank: Path, tmp_path: Path) -> None:
    run = _copy(batches, tmp_path / "run")
    extra = ["--fsdp"] if mode == "fsdp" else []
    p = torchrun(["--run-dir", str(run), "--model", str(tiny_model), *ARGS, *extra])
    assert p.returncode == 0, p.stderr[-3000:]
    start = next(e for e in map(json.loads, (run / "trainer.log").read_text().splitlines()) if e["event"] == "start")
    assert start["world_size"] == 2
    if mode == "fsdp":
        # FSDP saves its state (the whole model and the optimizer) through
        # accelerate; only the newest --keep-optimizer-states (default 2)
        # checkpoints keep it, the adapters stay in all
        has_state = [(run / "checkpoints" / f"step-{s:06d}" / "accelerate_state").is_dir() for s in range(1, STEPS + 1)]
        assert has_state == [s > STEPS - 2 for s in range(1, STEPS + 1)], f"accelerate_state in steps 1..{STEPS}: {has_state}"
        assert all((run / "checkpoints" / f"step-{s:06d}" / "adapter_model.safetensors").is_file() for s in range(1, STEPS + 1))
        assert not [p for p in (run / "checkpoints").rglob(".*") if p.is_dir()], "a pruned folder was left behind"
    assert_same_as_one_rank(run, one_rank)


def test_rank_killed_mid_step_restarts_the_group(tiny_model: Path, batches: Path, one_rank: Path, tmp_path: Path) -> None:
    """Rank 1 is SIGKILLed holding step 2's batch: torchrun ends the other
    rank and exits, the group is started again whole (as parley's
    supervisor does, internal/proc), resumes after step 1, and step 2 is
    trained once: the adapters equal the uninterrupted one-rank run's.
    (torchrun's own --max-restarts is not used: on torch 2.13 with gloo
    its restarted workers at times read the dead attempt's addresses and
    time out connecting.)"""
    run = _copy(batches, tmp_path / "run")
    argv = ["--run-dir", str(run), "--model", str(tiny_model), *ARGS, "--fsdp"]
    p = torchrun(argv, env={"PARLEY_CRASH_AT": "trainer-batch-loaded@1:2"})
    assert p.returncode != 0, "the group went on without rank 1"
    assert "exitcode  : -9" in p.stderr, p.stderr[-3000:]
    assert not (run / "checkpoints" / "step-000002").exists()
    # the same command again; it has two steps left to train
    p = torchrun([*argv, "--max-steps", str(STEPS - 1)])
    assert p.returncode == 0, p.stderr[-3000:]
    log = [json.loads(line) for line in (run / "trainer.log").read_text().splitlines()]
    assert [e["resume_step"] for e in log if e["event"] == "start"] == [-1, 1], "the second group did not resume after step 1"
    # step 2 was in hand when rank 1 died: the log counts each step once
    assert [e["step"] for e in log if e["event"] == "step"] == [1, 2, 3]
    assert_same_as_one_rank(run, one_rank)


def test_ranks_that_disagree_on_the_step_are_refused(tiny_model: Path, batches: Path, one_rank: Path, tmp_path: Path) -> None:
    """Each rank reads its own run directory (nodes without a shared
    volume): rank 0's has step 1 finished, rank 1's nothing. Both refuse
    at once, naming each rank's step, instead of training apart."""
    dirs = [_copy(batches, tmp_path / "rank0"), _copy(batches, tmp_path / "rank1")]
    shutil.copytree(one_rank / "checkpoints" / "step-000001", dirs[0] / "checkpoints" / "step-000001")
    wrapper = tmp_path / "rank.sh"
    trainer = [sys.executable, "-m", "parley_trainer", "--model", str(tiny_model), *ARGS]
    wrapper.write_text('#!/bin/sh\nexec "$@" --run-dir "' + str(tmp_path) + '/rank$RANK"\n')
    wrapper.chmod(0o755)
    p = torchrun([str(wrapper), *trainer], no_python=True)
    assert p.returncode != 0
    msg = "trainer ranks disagree on the step: rank 0 resumes after step 1; rank 1 resumes with no finished step"
    assert msg in p.stderr, p.stderr[-3000:]
    # and so does torchrun's closing report, the last lines parley shows
    # when it gives up on a trainer (internal/proc, 20 lines)
    assert msg in "\n".join(p.stderr.splitlines()[-20:]), p.stderr[-3000:]
    for d in dirs:  # nothing trained
        assert not (d / "checkpoints" / "step-000002").exists()


def test_step_disagreement_names_each_rank() -> None:
    check_ranks_agree([(2, 3, False), (2, 3, False)])
    check_ranks_agree([(4, -1, False)])
    with pytest.raises(RankMismatchError) as e:
        check_ranks_agree([(2, 3, False), (2, 3, True)])
    assert "rank 0 is after step 2, at step 3, and trains it; rank 1 is after step 2, at step 3, and skips it (its checkpoint has DONE)" in str(e.value)
