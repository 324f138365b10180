"""The trainer end to end: file and HTTP handshakes, checkpoints, resume."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file

from helpers import load_model, make_rows, read_tensorboard
from parley_trainer.batch import arrow_schema, write_batch
from parley_trainer.checkpoint import find_resume, read_done
from parley_trainer.handshake import FileHandshake
from parley_trainer.train import main

REPO = Path(__file__).resolve().parents[2]
COMMON = ["--lr", "1e-3", "--lora-r", "4", "--lora-alpha", "8", "--poll-interval", "0.05", "--quiet"]


@pytest.fixture(scope="module")
def rows_model(tiny_model):
    return load_model(tiny_model)


def _write(run: Path, step: int, model, seed: int) -> None:
    write_batch(str(run), step, step - 1, make_rows(model, 6, model.config.vocab_size, seed=seed))


def test_file_handshake_end_to_end(tiny_model, rows_model, tmp_path):
    run = tmp_path / "run"
    _write(run, 1, rows_model, seed=10)
    argv = ["--run-dir", str(run), "--model", str(tiny_model), "--mode", "file", "--max-steps", "1", *COMMON]
    assert main(argv) == 0

    ckpt = run / "checkpoints" / "step-000001"
    done = json.loads((ckpt / "DONE").read_text())
    assert done["step"] == 1 and done["policy_version"] == 1 and done["batch_policy_version"] == 0
    assert done["adapter_path"] == str(ckpt.resolve())
    for k in ("loss", "clip_frac_low", "clip_frac_high", "approx_kl", "grad_norm", "entropy", "tokens_per_second", "masked_tokens", "sequences"):
        assert k in done["metrics"], f"DONE metrics lack {k}: {sorted(done['metrics'])}"
    assert done["metrics"]["sequences"] == 6
    cfg = json.loads((ckpt / "adapter_config.json").read_text())
    assert sorted(cfg["target_modules"]) == ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    w = load_file(str(ckpt / "adapter_model.safetensors"))
    lora_b = [v for k, v in w.items() if "lora_B" in k]
    assert lora_b and any(float(v.abs().sum()) > 0 for v in lora_b), "LoRA B weights are still zero: nothing trained"
    assert (ckpt / "optimizer.pt").exists()
    log = [json.loads(line) for line in (run / "trainer.log").read_text().splitlines()]
    assert any(e["event"] == "step" and e["step"] == 1 for e in log)
    before = (ckpt / "DONE").read_bytes()

    # A second run resumes after step 1: it trains step 2, never step 1 again.
    _write(run, 2, rows_model, seed=11)
    assert main(argv) == 0
    assert (ckpt / "DONE").read_bytes() == before
    assert read_done(run / "checkpoints" / "step-000002")["step"] == 2
    log = [json.loads(line) for line in (run / "trainer.log").read_text().splitlines()]
    assert [e["step"] for e in log if e["event"] == "step"] == [1, 2]
    assert any(e["event"] == "resume" and e["step"] == 1 for e in log)

    # Even from scratch, the handshake skips steps whose checkpoint has DONE.
    hs = FileHandshake(run, poll_interval=0.01)
    _write(run, 3, rows_model, seed=12)
    assert hs.next_batch(-1, lambda: False).step == 3

    # The stop file ends a run that waits for a batch that never comes.
    (run / "STOP").write_text("")
    assert main([*argv[:-len(COMMON)], "--max-steps", "0", "--exit-when-file", *COMMON]) == 0


def test_checkpoint_round_trip(tiny_model, rows_model, tmp_path):
    from parley_trainer.config import TrainConfig
    from parley_trainer.train import Trainer

    run = tmp_path / "run"
    _write(run, 1, rows_model, seed=20)
    from parley_trainer.modeling import LoraSettings

    cfg = TrainConfig(run_dir=run, model=tiny_model, lr=1e-2, lora=LoraSettings(r=4, alpha=8), quiet=True, max_steps=1, poll_interval=0.05)
    t1 = Trainer(cfg)
    assert t1.run(FileHandshake(run, 0.05)) == 1
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        want = t1.model(input_ids=ids).logits
    opt1 = t1.optimizer.state_dict()

    t2 = Trainer(cfg)
    assert t2.last_step == 1
    with torch.no_grad():
        got = t2.model(input_ids=ids).logits
    torch.testing.assert_close(got, want)
    opt2 = t2.optimizer.state_dict()
    assert opt1["state"].keys() == opt2["state"].keys() and len(opt1["state"]) > 0
    for k in opt1["state"]:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            torch.testing.assert_close(opt2["state"][k][name], opt1["state"][k][name])
    # base model without the adapter differs (the adapter really changed it)
    with torch.no_grad(), t2.policy.model.disable_adapter():
        base = t2.model(input_ids=ids).logits
    assert not torch.allclose(base, want)
    rp = find_resume(run)
    assert rp is not None and rp.step == 1


def test_bad_batch_fails_naming_the_column(tiny_model, tmp_path):
    run = tmp_path / "run"
    (run / "batches").mkdir(parents=True)
    rows = [
        {
            "run_id": "r", "sample_id": "s", "group_id": "g", "rollout_id": "o", "prompt_id": "p", "step": 1, "policy_version": 0,
            "env": "e", "role": "A", "input_ids": [5, 6, 7], "loss_mask": [0, 1, 1], "inference_logprobs": [0.0, -1.0, -1.0],
            "advantages": [0.0, 1.0, 1.0], "reward": 1.0, "temperature": 1.0,
        }
    ]
    v1 = arrow_schema(1)
    schema = v1.remove(v1.get_field_index("inference_logprobs"))
    rows[0].pop("inference_logprobs")
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink)
    data = sink.getvalue()
    (run / "batches" / "step-000001.parquet").write_bytes(data)
    import hashlib

    ready = {"schema_version": 1, "step": 1, "policy_version": 0, "rows": 1, "tokens": 3, "sha256": hashlib.sha256(data).hexdigest()}
    (run / "batches" / "step-000001.ready").write_text(json.dumps(ready))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run(
        [sys.executable, "-m", "parley_trainer", "--run-dir", str(run), "--model", str(tiny_model), "--max-steps", "1", "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=env,
    )
    assert p.returncode == 2, p.stderr[-2000:]
    assert "column inference_logprobs: missing" in p.stderr
    assert not (run / "checkpoints" / "step-000001" / "DONE").exists()


class _FakeOrchestrator:
    """The orchestrator's side of the HTTP handshake (handshake.Server's
    wire format), serving one run directory."""

    def __init__(self, run: Path, token: str) -> None:
        self.run, self.token = run, token
        self.uploads: dict[int, list[tuple[str, bytes]]] = {}
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _reply(self, code: int, body: bytes = b"", ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _auth(self) -> bool:
                if self.headers.get("Authorization") != f"Bearer {outer.token}":
                    self._reply(401, b'{"error":"missing or wrong bearer token"}')
                    return False
                return True

            def do_GET(self):
                if not self._auth():
                    return
                if self.path.startswith("/v1/batches/next"):
                    after = int(self.path.split("after=")[1].split("&")[0])
                    steps = sorted(
                        int(p.name[5:11]) for p in (outer.run / "batches").glob("step-*.ready")
                    )
                    steps = [s for s in steps if s > after and s not in outer.uploads]
                    if not steps:
                        self._reply(204)
                        return
                    s = steps[0]
                    ready = json.loads((outer.run / "batches" / f"step-{s:06d}.ready").read_text())
                    answer = {"step": s, "ready": ready}
                    sidecar = outer.run / "rollouts" / f"step-{s:06d}.metrics.json"
                    if sidecar.exists():  # the step's metrics, as the Go server adds them
                        answer["metrics"] = json.loads(sidecar.read_text())["metrics"]
                    self._reply(200, json.dumps(answer).encode())
                else:
                    s = int(self.path.rsplit("/", 1)[1])
                    self._reply(200, (outer.run / "batches" / f"step-{s:06d}.parquet").read_bytes(), "application/vnd.apache.parquet")

            def do_POST(self):
                if not self._auth():
                    return
                s = int(self.path.split("/")[3])
                assert self.headers.get("Content-Type") == "application/x-tar"
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with tarfile.open(fileobj=io.BytesIO(body), mode="r:") as tf:
                    members = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers() if m.isfile()]
                outer.uploads[s] = members
                self._reply(200, b'{"status":"ok"}')

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_http_handshake(tiny_model, rows_model, tmp_path, monkeypatch):
    remote = tmp_path / "remote"
    _write(remote, 1, rows_model, seed=30)
    (remote / "rollouts").mkdir()
    (remote / "rollouts" / "step-000001.metrics.json").write_text(json.dumps({"metrics": {"step": 1, "reward_mean": 0.375}}))
    orch = _FakeOrchestrator(remote, "s3cret")
    try:
        monkeypatch.setenv("TEST_TRAINER_TOKEN", "s3cret")
        local = tmp_path / "local"
        argv = ["--run-dir", str(local), "--model", str(tiny_model), "--mode", "http", "--url", orch.url,
                "--token-env", "TEST_TRAINER_TOKEN", "--http-wait", "0.2", "--max-steps", "1", *COMMON]
        assert main(argv) == 0
        members = orch.uploads[1]
        names = [n for n, _ in members]
        assert names[-1] == "DONE", names
        assert "adapter_model.safetensors" in names and "adapter_config.json" in names
        assert "optimizer.pt" not in names and "rng.pt" not in names
        done = json.loads(members[-1][1])
        assert done["step"] == 1 and "adapter_path" not in done and done["metrics"]["sequences"] == 6
        assert read_done(local / "checkpoints" / "step-000001") is not None
        # parley's step metrics came with the batch: TensorBoard on the
        # trainer's machine has them beside the trainer's.
        tb = read_tensorboard(local / "tensorboard")
        assert tb["parley/reward_mean"] == [(1, 0.375)] and [s for s, _ in tb["trainer/loss"]] == [1]

        # A restarted trainer uploads its newest checkpoint again (the
        # upload may have been lost in a crash after DONE), then goes on.
        orch.uploads.clear()
        (local / "STOP").write_text("")
        assert main([*argv, "--exit-when-file"]) == 0
        assert [n for n, _ in orch.uploads[1]][-1] == "DONE"
    finally:
        orch.close()


def test_dry_run_cli(tiny_model, capsys):
    assert main(["--model", str(tiny_model), "--dry-run", "--lora-r", "4"]) == 0
    line = [l for l in capsys.readouterr().out.splitlines() if '"dry_run"' in l][-1]
    m = json.loads(line)
    assert m["sequences"] == 8 and np.isfinite(m["loss"])


@pytest.mark.parametrize(("model", "what"), [("missing", "no such folder"), ("empty", "not a Hugging Face model folder (no config.json)")])
def test_model_that_is_not_a_model_folder_is_refused(model, what, tmp_path, capsys):
    """Exit 2 (parley does not restart it) naming the flag and the key,
    before anything loads, rather than a traceback from transformers."""
    path = tmp_path / model
    if model == "empty":
        path.mkdir()
    assert main(["--model", str(path), "--run-dir", str(tmp_path / "run"), "--report-to", "none"]) == 2
    err = capsys.readouterr().err
    assert f"trainer: --model {path} (parley's trainer.model): {what}" in err, err
    assert not (tmp_path / "run").exists()


def test_empty_batch_is_answered_without_training(tiny_model, rows_model, tmp_path):
    run = tmp_path / "run"
    _write(run, 1, rows_model, seed=40)
    write_batch(str(run), 2, 1, [])
    argv = ["--run-dir", str(run), "--model", str(tiny_model), "--max-steps", "2", *COMMON]
    assert main(argv) == 0
    d1, d2 = run / "checkpoints" / "step-000001", run / "checkpoints" / "step-000002"
    done = read_done(d2)
    assert done["metrics"]["sequences"] == 0 and done["metrics"]["empty_batch"] == 1
    assert (d2 / "adapter_model.safetensors").read_bytes() == (d1 / "adapter_model.safetensors").read_bytes()
