"""Full weights to vLLM by NCCL broadcast (--full-finetune --weight-transfer
nccl; parley's train.weight_sync.transfer: nccl). GPU only: vLLM's NCCL
engine needs CUDA on both sides. Not exercised by CI (vLLM's CPU build has
no NCCL); scripts/gpu_check_full.sh runs it on a GPU machine.

The protocol, with parley (llm/weightsync NCCL):

  1. parley pauses every endpoint (POST /pause) and writes
     RUN/weight-sync/step-N.request {"step": N, "endpoints": [urls]};
  2. this trainer, between steps (while it waits for the next batch),
     broadcasts step N's weights with vLLM's trainer-side engine
     (vllm.distributed.weight_transfer.nccl_engine.NCCLTrainerWeightTransferEngine),
     which drives each endpoint's /start_weight_update, /update_weights (run
     concurrently with the broadcast) and /finish_weight_update itself, and
     answers step-N.sent (or step-N.failed with the reason);
  3. parley sets the weight version, verifies version and checksums against
     the checkpoint on disk, resets the prefix cache and resumes.

The weights sent are the trainer's own module when it holds step N (it has
just trained it), else step N's checkpoint read from disk (a request asked
again after a crash): a request is idempotent.

Several endpoints are one NCCL group: the trainer is rank 0 and endpoint i's
workers follow from rank 1 + the world sizes of the endpoints before it
(GET /get_world_size?include_dp=false), as vLLM's own engine sets
rank_offset 1 for one endpoint. The rendezvous is a TCPStore at --nccl-addr
(host:port), which every endpoint's workers must reach. One trainer process
only (no FSDP): vLLM's engine gathers FSDP shards in a collective every rank
must join, which this file protocol does not coordinate.
"""

from __future__ import annotations

import importlib
import json
import os
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .atomic import write_atomic

SYNC_DIR = "weight-sync"


def world_sizes(urls: list[str], timeout: float = 30.0) -> list[int]:
    """Each endpoint's world size without data parallelism: the NCCL ranks
    its workers take (GET /get_world_size?include_dp=false)."""
    out = []
    for u in urls:
        with urllib.request.urlopen(f"{u.rstrip('/')}/get_world_size?include_dp=false", timeout=timeout) as r:
            out.append(int(json.load(r)["world_size"]))
    return out


def rank_offsets(sizes: list[int]) -> list[int]:
    """The first NCCL rank of each endpoint's workers (the trainer is 0)."""
    offs, nxt = [], 1
    for s in sizes:
        offs.append(nxt)
        nxt += s
    return offs


class FanOutClient:
    """vLLM's VLLMWeightSyncClient protocol over several endpoints: each call
    goes to every endpoint at once (HTTPVLLMWeightSyncClient each), the init
    with that endpoint's rank_offset."""

    def __init__(self, urls: list[str], sizes: list[int], timeout: float = 600.0) -> None:
        clients = importlib.import_module("vllm.distributed.weight_transfer.clients")
        self.clients = [clients.HTTPVLLMWeightSyncClient(u, timeout=timeout) for u in urls]
        self.offsets = rank_offsets(sizes)
        self.pool = ThreadPoolExecutor(max_workers=max(1, len(urls)))

    def _all(self, call: Callable[[Any, int], None]) -> None:
        futures = [self.pool.submit(call, c, i) for i, c in enumerate(self.clients)]
        for f in futures:
            f.result()

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self._all(lambda c, i: c.init_weight_transfer_engine({**init_info, "rank_offset": self.offsets[i]}))

    def shutdown_weight_transfer_engine(self) -> None:
        self._all(lambda c, _i: c.shutdown_weight_transfer_engine())

    def start_weight_update(self) -> None:
        self._all(lambda c, _i: c.start_weight_update())

    def update_weights(self, update_info: Any) -> None:
        self._all(lambda c, _i: c.update_weights(update_info))

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        self._all(lambda c, _i: c.finish_weight_update(weight_version))


def checkpoint_source(folder: Path) -> Any:
    """A WeightSource over the safetensors of a checkpoint folder, moved to
    the GPU (what the broadcast sends from)."""
    base = importlib.import_module("vllm.distributed.weight_transfer.base")
    from safetensors.torch import load_file

    tensors: dict[str, Any] = {}
    for f in sorted(folder.glob("*.safetensors")):
        tensors.update(load_file(str(f), device="cuda"))

    class _Source(base.WeightSource):  # type: ignore[misc,name-defined]
        def metadata(self) -> list[Any]:
            return [base.ParamMeta(n, t.dtype, tuple(t.shape)) for n, t in tensors.items()]

        def __iter__(self) -> Iterator[tuple[str, Any]]:
            yield from tensors.items()

    return _Source()


class NCCLSender:
    """Answers parley's requests (RUN/weight-sync/step-N.request) by
    broadcasting the step's weights to every endpoint (module docstring)."""

    def __init__(self, run_dir: Path, nccl_addr: str, log: Callable[..., None]) -> None:
        host, _, port = nccl_addr.rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"--nccl-addr {nccl_addr!r}: want host:port of the NCCL rendezvous")
        self.dir = run_dir / SYNC_DIR
        self.host, self.port = host, int(port)
        self.log = log
        self.engine: Any = None
        self.endpoints: list[str] = []

    def _init(self, endpoints: list[str], module: Any) -> None:
        """The NCCL group with these endpoints (again when they change)."""
        nccl = importlib.import_module("vllm.distributed.weight_transfer.nccl_engine")
        base = importlib.import_module("vllm.distributed.weight_transfer.base")
        sizes = world_sizes(endpoints)
        info = nccl.NCCLTrainerInitInfo(master_address=self.host, master_port=self.port, world_size=1 + sum(sizes), rank=0)
        client = FanOutClient(endpoints, sizes)
        self.engine = nccl.NCCLTrainerWeightTransferEngine.trainer_init(info, client=client, source=base.ModuleSource(module))
        self.endpoints = endpoints
        self.log("nccl_init", endpoints=endpoints, world_size=1 + sum(sizes))

    def serve(self, module: Any, current_step: int, checkpoint: Callable[[int], Path]) -> None:
        """Answer every pending request: broadcast from module when it holds
        the step asked, else from the step's checkpoint."""
        if not self.dir.is_dir():
            return
        for req in sorted(self.dir.glob("step-*.request")):
            stem = req.with_suffix("")
            if stem.with_suffix(".sent").exists() or stem.with_suffix(".failed").exists():
                continue
            try:
                r = json.loads(req.read_text())
                step, endpoints = int(r["step"]), [str(u) for u in r["endpoints"]]
                if self.engine is None or endpoints != self.endpoints:
                    self._init(endpoints, module)
                if step != current_step:
                    self.engine.source = checkpoint_source(checkpoint(step))
                else:
                    self.engine.source = importlib.import_module("vllm.distributed.weight_transfer.base").ModuleSource(module)
                self.engine.send_weights()
            except Exception as e:  # noqa: BLE001 - the reason goes to parley
                write_atomic(stem.with_suffix(".failed"), f"{type(e).__name__}: {e}\n".encode())
                self.log("nccl_failed", request=str(req), error=str(e))
                continue
            write_atomic(stem.with_suffix(".sent"), b"{}\n")
            self.log("nccl_sent", step=step, endpoints=len(endpoints))


def sender_from_env(run_dir: Path, nccl_addr: str, log: Callable[..., None]) -> NCCLSender:
    """The sender of --weight-transfer nccl, refusing what it cannot do."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise SystemExit("--weight-transfer nccl: one trainer process only (no FSDP); use train.weight_sync.transfer: disk")
    return NCCLSender(run_dir, nccl_addr, log)
