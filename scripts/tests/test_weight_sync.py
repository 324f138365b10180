"""The NCCL weight transfer's trainer side (parley_trainer.weight_sync) as
far as it runs without a GPU: the ranks of several endpoints, and a request
that cannot be served answered with .failed and the reason (parley's
weightsync.NCCL reads it)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from parley_trainer.weight_sync import SYNC_DIR, NCCLSender, rank_offsets


def test_rank_offsets():
    # the trainer is rank 0; each endpoint's workers follow
    assert rank_offsets([1]) == [1]
    assert rank_offsets([2, 4, 1]) == [1, 3, 7]


def test_unreachable_endpoint_answers_failed(tmp_path: Path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    d = tmp_path / SYNC_DIR
    d.mkdir()
    (d / "step-000002.request").write_text(json.dumps({"step": 2, "endpoints": [f"http://127.0.0.1:{port}"]}))
    events: list[str] = []
    sender = NCCLSender(tmp_path, "127.0.0.1:29500", lambda ev, **_: events.append(ev))
    sender.serve(module=None, current_step=2, checkpoint=lambda step: tmp_path)
    failed = d / "step-000002.failed"
    assert failed.exists()
    assert "URLError" in failed.read_text() or "Connection refused" in failed.read_text()
    assert not (d / "step-000002.sent").exists()
    assert events == ["nccl_failed"]
    # answered once: a second pass leaves it
    sender.serve(module=None, current_step=2, checkpoint=lambda step: tmp_path)
    assert events == ["nccl_failed"]
