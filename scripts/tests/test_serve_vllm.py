"""The vLLM launcher: parley's flags are there, and vLLM's own parser takes them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from parley_trainer.serve_vllm import ENV_DEFAULTS, server_env, vllm_args


def test_flags_parley_needs():
    args = vllm_args("models/tiny", "tiny", 8123, max_lora_rank=32, max_loras=2)
    joined = " ".join(args)
    for want in (
        "--model models/tiny",
        "--served-model-name tiny",
        "--port 8123",
        "--host 127.0.0.1",
        "--enable-lora",
        "--max-lora-rank 32",
        "--max-loras 2",
        "--no-enable-chunked-prefill",
        "--generation-config vllm",
        "--logprobs-mode processed_logprobs",
    ):
        assert want in joined, want
    env = server_env({"VLLM_CPU_KVCACHE_SPACE": "4"})
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "4"  # an explicit value wins
    assert set(ENV_DEFAULTS) <= set(env)
    # every server process loads vllm_site/sitecustomize.py (vllm_lora_fix)
    assert env["PYTHONPATH"].split(os.pathsep)[0].endswith("vllm_site")


def test_bad_rank_is_refused():
    with pytest.raises(ValueError, match="--max-lora-rank 12"):
        vllm_args("m", "m", 1, max_lora_rank=12)
    p = subprocess.run(
        [sys.executable, "-m", "parley_trainer.serve_vllm", "--model", "m", "--served-model-name", "m", "--port", "1", "--max-lora-rank", "12"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2 and "--max-lora-rank 12" in p.stderr


def test_vllm_parser_accepts_the_flags():
    """vLLM's own argument parser (the installed, pinned version) takes every
    flag: a renamed flag fails here, not at a server's start."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    ns = parser.parse_args(vllm_args("models/tiny", "tiny", 8123, extra=["--max-num-seqs", "64"]))
    assert ns.enable_lora is True and ns.max_lora_rank == 16 and ns.max_loras == 4
    assert ns.enable_chunked_prefill is False
    assert ns.generation_config == "vllm" and ns.logprobs_mode == "processed_logprobs"
    so = ns.structured_outputs_config
    so = so if isinstance(so, dict) else vars(so)
    assert so.get("backend") == "xgrammar" and so.get("disable_any_whitespace") is True, so
    assert ns.max_num_seqs == 64


def test_print(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "parley_trainer.serve_vllm", "--model", "models/tiny", "--served-model-name", "tiny", "--port", "9", "--print"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True" in p.stdout
    assert "-m vllm.entrypoints.openai.api_server --model models/tiny" in p.stdout


def test_exit_status_passes_through():
    from parley_trainer.serve_vllm import run

    assert run(["sh", "-c", "exit 3"], dict(os.environ)) == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_server_dies_with_the_launcher(tmp_path):
    """SIGKILL of the launcher (as when parley, its parent, is SIGKILLed)
    ends the server it started: vLLM then stops its engine processes."""
    pidfile = tmp_path / "child.pid"
    child = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    code = f"import os, sys; from parley_trainer.serve_vllm import run; sys.exit(run([sys.executable, '-c', {child!r}], dict(os.environ)))"
    launcher = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the server outlived its SIGKILLed launcher")
