"""Serve a model with vLLM's OpenAI-compatible server, with the flags parley
needs. The one place those flags are written down: the quickstart
(configs/quickstart.yaml's train.server_command), the Go tests and the README
all start vLLM through this module.

    python -m parley_trainer.serve_vllm --model models/tiny --served-model-name tiny --port 8000
    python -m parley_trainer.serve_vllm ... --print        # show the command, start nothing
    python -m parley_trainer.serve_vllm ... -- --max-num-seqs 64   # more vLLM flags after --

Flags and why (vLLM 0.32, CPU build, as pinned in scripts/requirements.txt):

  --enable-lora, VLLM_ALLOW_RUNTIME_LORA_UPDATING=True
      parley hot-loads each step's adapter (/v1/load_lora_adapter).
  --full-weights: VLLM_SERVER_DEV_MODE=1, no --enable-lora
      full fine-tuning (trainer.full_finetune): parley updates the weights
      in place through vLLM's RL routes (/pause, /collective_rpc
      reload_weights, /update_weight_version, /weight_checker,
      /reset_prefix_cache, /resume), which only the dev mode serves. LoRA is
      left out: a reload drops every loaded adapter.
  --max-lora-rank R (default 16)
      at least the trainer's lora_r (trainer.lora_r); vLLM accepts 1, 8, 16,
      32, 64, 128, 256, 320, 512.
  --max-loras N (default 4)
      adapters in one batch: parley keeps one per run, the tests share one
      server between runs.
  --no-enable-chunked-prefill
      on CPU, a seeded request whose prefill is split into chunks kills the
      engine ("CPU Generator does not use offset"); every request after that
      gets a 500. parley sends a seed with every request.
  --generation-config vllm
      ignore the model's generation_config.json: Qwen3's (temperature 0.6,
      top_k 20, top_p 0.95) would otherwise be applied to every request that
      does not set them, while the trainer assumes the parameters parley sends.
  --logprobs-mode processed_logprobs
      the logprob of the distribution actually sampled from (after
      temperature, top-k, top-p), which is what the trainer's default
      temperature scaling computes. vLLM's default (raw_logprobs) is the
      model's before temperature.
  --structured-outputs-config '{"backend": "xgrammar", "disable_any_whitespace": true}'
      a judge's JSON-schema reply (response_format json_schema) without
      free whitespace between its tokens: a small model decoding under the
      schema otherwise may pad spaces until max_tokens cuts the reply off
      before its score (measured on the tiny model: 1,024 tokens of them).
      vLLM accepts disable_any_whitespace only with a named backend;
      xgrammar is the one its "auto" picks for parley's schemas.
  --dtype float32 (CPU)
      the tiny model's weights are fp32 and so is the trainer on CPU.
  --max-model-len L (default 4096)
  --host 127.0.0.1
      loopback unless told otherwise.
  PYTHONPATH with vllm_site/ (sitecustomize: parley_trainer.vllm_lora_fix)
      vLLM 0.32's CPU LoRA ops give a base-model request the adapter in the
      last LoRA slot once --max-loras adapters have been loaded (index -1);
      the fix gives index -1 a zero slot, as the GPU kernels skip it.
  VLLM_CPU_KVCACHE_SPACE=1 (GiB, CPU build)
      without it vLLM sizes its KV cache from the machine's memory and
      refuses to start when other processes hold some ("Available memory on
      node 0 ... less than desired CPU memory utilization").

vLLM runs as this process's child, which gets SIGTERM when this process
dies (Linux PR_SET_PDEATHSIG), so vLLM shuts its engine processes down even
when whoever started this one was SIGKILLed: parley's supervisor kills its
direct child when parley dies, and vLLM's engine processes, grandchildren
of that child, would otherwise live on (measured: they did, holding the
model and the KV cache). SIGTERM and SIGINT sent to this process are passed
on to vLLM; its exit status is this process's. Start-up takes about a
minute on 2 cores, the first completion some seconds more.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Sequence

VLLM_MODULE = "vllm.entrypoints.openai.api_server"

# Structured output (a judge's response_format json_schema) decoded by
# xgrammar with no free whitespace between JSON tokens.
STRUCTURED_OUTPUTS_CONFIG = '{"backend": "xgrammar", "disable_any_whitespace": true}'

# vLLM's accepted --max-lora-rank values.
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

# Environment every server gets (an explicit value in the environment wins).
ENV_DEFAULTS = {
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def vllm_args(
    model: str,
    served_model_name: str,
    port: int,
    host: str = "127.0.0.1",
    max_model_len: int = 4096,
    max_lora_rank: int = 16,
    max_loras: int = 4,
    dtype: str = "float32",
    extra: Sequence[str] = (),
    full_weights: bool = False,
) -> list[str]:
    """vLLM's server arguments (after `python -m vllm.entrypoints.openai.api_server`)."""
    if max_lora_rank not in LORA_RANKS:
        raise ValueError(f"--max-lora-rank {max_lora_rank}: vLLM accepts {', '.join(map(str, LORA_RANKS))}")
    if max_loras < 1:
        raise ValueError(f"--max-loras {max_loras}: must be at least 1")
    lora = [] if full_weights else ["--enable-lora", "--max-lora-rank", str(max_lora_rank), "--max-loras", str(max_loras)]
    return [
        "--model", model,
        "--served-model-name", served_model_name,
        "--host", host,
        "--port", str(port),
        "--max-model-len", str(max_model_len),
        "--dtype", dtype,
        *lora,
        "--no-enable-chunked-prefill",
        "--generation-config", "vllm",
        "--logprobs-mode", "processed_logprobs",
        "--structured-outputs-config", STRUCTURED_OUTPUTS_CONFIG,
        "--disable-uvicorn-access-log",
        *extra,
    ]  # fmt: skip


def server_env(base: dict[str, str] | None = None, full_weights: bool = False) -> dict[str, str]:
    """The server's environment: base (default os.environ) with ENV_DEFAULTS
    filled in where unset (and VLLM_SERVER_DEV_MODE=1 for full weights)."""
    env = dict(os.environ if base is None else base)
    for k, v in ENV_DEFAULTS.items():
        env.setdefault(k, v)
    if full_weights:
        env["VLLM_SERVER_DEV_MODE"] = "1"
    # vllm_site/sitecustomize.py installs vllm_lora_fix in every process of
    # the server; this package's folder goes first so that it imports.
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(here, "vllm_site"), os.path.dirname(here)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: get SIGTERM when the parent dies (Linux;
    elsewhere a no-op), and exit now if it already has."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def run(cmd: list[str], env: dict[str, str]) -> int:
    """Run cmd as a child that dies with this process; pass SIGTERM/SIGINT
    on; return its exit status (128 + signal when a signal ended it)."""
    me = os.getpid()
    # preexec_fn is unsafe with threads; this process starts none (it only waits)
    proc = subprocess.Popen(cmd, env=env, preexec_fn=lambda: _die_with_parent(me))  # noqa: PLW1509

    def forward(sig: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    rc = proc.wait()
    return 128 - rc if rc < 0 else rc


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m parley_trainer.serve_vllm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="model folder (or hub id where the hub is reachable)")
    p.add_argument("--served-model-name", required=True, help="the name parley's policy.model asks for")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--max-lora-rank", type=int, default=16, help="at least trainer.lora_r")
    p.add_argument("--max-loras", type=int, default=4)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--full-weights", action="store_true", help="serve vLLM's RL routes for full-weights updates (VLLM_SERVER_DEV_MODE=1), without LoRA")
    p.add_argument("--print", action="store_true", help="print the command and environment, start nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    a = build_parser().parse_args(argv)
    try:
        args = vllm_args(
            a.model, a.served_model_name, a.port, host=a.host, max_model_len=a.max_model_len,
            max_lora_rank=a.max_lora_rank, max_loras=a.max_loras, dtype=a.dtype, extra=extra,
            full_weights=a.full_weights,
        )  # fmt: skip
    except ValueError as e:
        print(f"serve_vllm: {e}", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", VLLM_MODULE, *args]
    env = server_env(full_weights=a.full_weights)
    if a.print:
        keys = [*ENV_DEFAULTS, *(["VLLM_SERVER_DEV_MODE"] if a.full_weights else [])]
        sets = " ".join(f"{k}={shlex.quote(env[k])}" for k in keys)
        print(f"{sets} {shlex.join(cmd)}")
        return 0
    sys.stdout.flush()
    return run(cmd, env)


if __name__ == "__main__":
    sys.exit(main())
