#!/usr/bin/env python3
"""parley's CPU dev inference server: serves a local Hugging Face model folder
(e.g. the tiny model of make_tiny_model.py) with the subset of vLLM's
OpenAI-compatible API that parley uses, in vLLM's JSON shapes, and loads LoRA
adapters at run time.

    python scripts/devserver.py --model models/tiny --served-model-name tiny \
        --host 127.0.0.1 --port 8000 --max-model-len 2048

Logprobs follow vLLM's --logprobs-mode: raw_logprobs (vLLM's default: the
model's distribution before temperature and top-k/top-p) or
processed_logprobs (the distribution actually sampled from).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from inference.api import App, make_server  # noqa: E402
from inference.engine import Engine  # noqa: E402
from inference.sampling import LOGPROBS_MODES  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="model folder")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on stdout)")
    p.add_argument("--served-model-name", nargs="+", default=None, help="name(s) the model answers to (default: --model)")
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--max-num-seqs", type=int, default=64, help="rows decoded together")
    p.add_argument("--max-logprobs", type=int, default=20)
    p.add_argument("--logprobs-mode", choices=LOGPROBS_MODES, default="raw_logprobs")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    p.add_argument("--api-key", default=os.environ.get("VLLM_API_KEY") or None, help="require this bearer token on /v1 routes")
    p.add_argument("--lora-modules", nargs="*", default=[], help="name=path adapters to load at start")
    p.add_argument("--enable-lora", action="store_true", help="accepted for vLLM compatibility (LoRA is always on)")
    p.add_argument("--max-lora-rank", type=int, default=0, help="accepted for vLLM compatibility")
    p.add_argument("--log-requests", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    engine = Engine(
        a.model,
        max_model_len=a.max_model_len,
        max_num_seqs=a.max_num_seqs,
        device=a.device,
        dtype=torch.bfloat16 if a.dtype == "bfloat16" else torch.float32,
        logprobs_mode=a.logprobs_mode,
        max_logprobs=a.max_logprobs,
    )
    for spec in a.lora_modules:
        name, _, path = spec.partition("=")
        engine.load_adapter(name, path)
    names = a.served_model_name or [a.model]
    app = App(engine, names, api_key=a.api_key)
    server = make_server(app, a.host, a.port, quiet=not a.log_requests)
    host, port = server.server_address[:2]
    print(json.dumps({"event": "listening", "url": f"http://{host}:{port}", "model": names[0]}), flush=True)

    def stop(_sig: int, _frm: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        engine.close()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
