"""The trainer's side of the batch handshake.

File mode: poll RUN/batches/ for the smallest step-N.ready above the last
finished step whose checkpoint has no DONE; read and verify step-N.parquet.
The checkpoint and DONE are written straight into RUN/checkpoints/.

HTTP mode (trainer on another machine; handshake.Server on parley's
side): GET {url}/v1/batches/next?after=N&wait=S (200 {step, ready} or 204),
GET {url}/v1/batches/{step} (the parquet), and POST
{url}/v1/batches/{step}/done with the checkpoint as an uncompressed tar
(application/x-tar) whose last member is DONE. Every request carries
"Authorization: Bearer <token>".

Both also bring parley's step metrics (reward, agreement, rounds, timings)
for the trainer's TensorBoard/W&B scalars: the "metrics" of the sidecar
RUN/rollouts/step-N.metrics.json (file mode), or of the next answer (HTTP
mode). They are optional: a batch without them trains the same.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .atomic import make_temp_file
from .batch import BatchError, Ready, sha256_hex
from .checkpoint import is_done, parse_step_name, write_checkpoint_tar


@dataclass
class Incoming:
    """A step's batch as received: its marker and the parquet bytes."""

    step: int
    ready: Ready
    data: bytes
    # parley's step metrics (None when the orchestrator left none)
    step_metrics: dict[str, Any] | None = None


class Handshake(Protocol):
    """Where batches come from and where finished checkpoints go."""

    def next_batch(self, after: int, should_stop: Callable[[], bool]) -> Incoming | None:
        """Block until the smallest unfinished step > after is ready; None
        when should_stop() turns true first."""
        ...

    def complete(self, step: int, ckpt: Path, done: dict[str, Any]) -> None:
        """Report a finished step whose checkpoint (with DONE) is in ckpt."""
        ...


class FileHandshake:
    """The file handshake over a run directory."""

    # A marker that stays unreadable this many polls is an error (markers are
    # written atomically, so one that does not parse will not heal).
    BAD_MARKER_POLLS = 3

    def __init__(self, run_dir: str | Path, poll_interval: float = 1.0, log: Callable[[str], None] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.poll_interval = poll_interval
        self.log = log or (lambda _msg: None)

    @property
    def batches_dir(self) -> Path:
        return self.run_dir / "batches"

    def _next_step(self, after: int) -> int | None:
        try:
            names = os.listdir(self.batches_dir)
        except FileNotFoundError:
            return None
        steps = []
        for name in names:
            if not name.endswith(".ready"):
                continue
            n = parse_step_name(name[: -len(".ready")])
            if n is not None and n > after and not is_done(self.run_dir, n):
                steps.append(n)
        return min(steps) if steps else None

    def next_batch(self, after: int, should_stop: Callable[[], bool]) -> Incoming | None:
        bad: dict[int, int] = {}
        while True:
            if should_stop():
                return None
            step = self._next_step(after)
            if step is not None:
                name = f"step-{step:06d}"
                try:
                    ready = Ready.from_json((self.batches_dir / f"{name}.ready").read_bytes())
                    if ready.step != step:
                        raise BatchError(f"{name}.ready says step {ready.step}")
                    data = (self.batches_dir / f"{name}.parquet").read_bytes()
                except (BatchError, OSError) as e:
                    bad[step] = bad.get(step, 0) + 1
                    if bad[step] >= self.BAD_MARKER_POLLS:
                        raise BatchError(f"batches/{name}: {e}") from e
                    self.log(f"batches/{name} not usable yet: {e}")
                else:
                    if ready.sha256 and sha256_hex(data) != ready.sha256:
                        raise BatchError(f"batches/{name}.parquet: sha256 {sha256_hex(data)} does not match the ready marker's {ready.sha256}")
                    metrics = read_step_metrics(self.run_dir, step, self.log)
                    return Incoming(step=step, ready=ready, data=data, step_metrics=metrics)
            time.sleep(self.poll_interval)

    def complete(self, step: int, ckpt: Path, done: dict[str, Any]) -> None:
        # The checkpoint and DONE are already in RUN/checkpoints/.
        return None


class HandshakeHTTPError(RuntimeError):
    """A handshake request that failed for good."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class HTTPHandshake:
    """The HTTP handshake client (stdlib only)."""

    def __init__(
        self,
        url: str,
        token: str,
        wait: float = 25.0,
        timeout: float = 60.0,
        retries: int = 8,
        log: Callable[[str], None] | None = None,
        upload_dir: str | Path | None = None,
    ) -> None:
        if not token:
            raise ValueError("the HTTP handshake needs a bearer token")
        self.url = url.rstrip("/")
        self.token = token
        self.wait = wait
        self.timeout = timeout
        self.retries = retries
        self.log = log or (lambda _msg: None)
        self.upload_dir = Path(upload_dir) if upload_dir else None

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request with retries (jittered backoff) on transport errors,
        429 and 5xx, honouring Retry-After. Other statuses are returned."""
        h = {"Authorization": f"Bearer {self.token}", "User-Agent": "parley-trainer"}
        h.update(headers or {})
        delay = 0.5
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if hasattr(body, "seek"):
                body.seek(0)
            req = urllib.request.Request(self.url + path, data=body, method=method, headers=h)
            try:
                with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                    return resp.status, dict(resp.headers.items()), resp.read()
            except urllib.error.HTTPError as e:
                payload = e.read()
                if e.code == 429 or e.code >= 500:
                    last = HandshakeHTTPError(f"{method} {path}: {e.code} {_error_text(payload)}", e.code)
                    ra = e.headers.get("Retry-After") if e.headers else None
                    wait = _retry_after(ra) if ra else delay * (0.5 + random.random())
                else:
                    return e.code, dict(e.headers.items()) if e.headers else {}, payload
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last = HandshakeHTTPError(f"{method} {path}: {e}")
                wait = delay * (0.5 + random.random())
            if attempt < self.retries:
                self.log(f"retrying {method} {path} in {wait:.1f}s: {last}")
                time.sleep(wait)
                delay = min(delay * 2, 30.0)
        assert last is not None
        raise last

    def next_batch(self, after: int, should_stop: Callable[[], bool]) -> Incoming | None:
        while True:
            if should_stop():
                return None
            status, _, body = self._request(
                "GET", f"/v1/batches/next?after={after}&wait={self.wait:g}", timeout=self.wait + self.timeout
            )
            if status == 204:
                continue
            if status != 200:
                raise HandshakeHTTPError(f"GET /v1/batches/next: {status} {_error_text(body)}", status)
            try:
                obj = json.loads(body)
                step = int(obj["step"])
                ready = Ready.from_json(obj["ready"])
            except (ValueError, KeyError, TypeError) as e:
                raise BatchError(f"GET /v1/batches/next: bad answer {body[:200]!r}: {e}") from e
            if ready.step != step:
                raise BatchError(f"GET /v1/batches/next: step {step} but its ready marker says {ready.step}")
            status, _, data = self._request("GET", f"/v1/batches/{step}")
            if status != 200:
                raise HandshakeHTTPError(f"GET /v1/batches/{step}: {status} {_error_text(data)}", status)
            if ready.sha256 and sha256_hex(data) != ready.sha256:
                raise BatchError(f"GET /v1/batches/{step}: sha256 {sha256_hex(data)} does not match the ready marker's {ready.sha256}")
            metrics = obj.get("metrics")
            if metrics is not None and not isinstance(metrics, dict):
                self.log(f"GET /v1/batches/next: step {step}'s metrics are not an object; ignored")
                metrics = None
            return Incoming(step=step, ready=ready, data=data, step_metrics=metrics)

    def complete(self, step: int, ckpt: Path, done: dict[str, Any]) -> None:
        remote = {k: v for k, v in done.items() if k != "adapter_path"}
        # a scratch file, named as an interrupted atomic write's (.upload-step-N.tar.tmp-*)
        tmp = make_temp_file(Path(self.upload_dir or ckpt.parent) / f"upload-step-{step:06d}.tar")
        try:
            size = write_checkpoint_tar(ckpt, remote, tmp)
            with open(tmp, "rb") as f:
                status, _, body = self._request(
                    "POST",
                    f"/v1/batches/{step}/done",
                    body=f,
                    headers={"Content-Type": "application/x-tar", "Content-Length": str(size)},
                    timeout=max(self.timeout, 600.0),
                )
        finally:
            tmp.unlink(missing_ok=True)
        if status != 200:
            raise HandshakeHTTPError(f"POST /v1/batches/{step}/done: {status} {_error_text(body)}", status)


def sidecar_path(run_dir: str | Path, step: int) -> Path:
    """rollouts/step-N.metrics.json, where parley leaves a step's metrics
    (dataset.RunDir.SidecarPath)."""
    return Path(run_dir) / "rollouts" / f"step-{step:06d}.metrics.json"


def read_step_metrics(run_dir: str | Path, step: int, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The "metrics" object of step's sidecar; None (said in the log when it
    exists but does not parse) when there is none: metrics never stop a
    step from training."""
    path = sidecar_path(run_dir, step)
    try:
        obj = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        log(f"{path}: unreadable step metrics, not reported: {e}")
        return None
    metrics = obj.get("metrics") if isinstance(obj, dict) else None
    if not isinstance(metrics, dict):
        log(f"{path}: no metrics object, not reported")
        return None
    return metrics


def _error_text(body: bytes) -> str:
    try:
        obj = json.loads(body)
        if isinstance(obj, dict) and "error" in obj:
            err = obj["error"]
            return err if isinstance(err, str) else json.dumps(err)
    except (ValueError, TypeError):
        pass
    return body[:300].decode("utf-8", "replace")


def _retry_after(value: str) -> float:
    try:
        return min(max(float(value), 0.0), 60.0)
    except ValueError:
        return 1.0
