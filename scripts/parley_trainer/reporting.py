"""Where each step's metrics go besides the trainer's log: TensorBoard event
files and, when the user asks, Weights & Biases.

``--report-to`` (config ``trainer.report_to``) follows HF Trainer's
``report_to``: ``tensorboard`` (the default), ``wandb``, both (a comma list
or several values), or ``none``. Every step logs, at the batch's step:

- ``trainer/<name>``: the trainer's own metrics (loss, approx_kl, kl_ref,
  entropy, grad_norm, clip_frac, mismatch_*, timings; the DONE metrics);
- ``parley/<name>``: parley's step metrics (reward, score, agreement,
  rounds, prefix breaks, sampling and judging timings), read from the
  step's sidecar ``rollouts/step-N.metrics.json`` (file mode) or the
  ``metrics`` of ``GET /v1/batches/next`` (HTTP mode).

TensorBoard: event files in ``RUN/tensorboard/`` (``--tensorboard-dir``),
written by ``torch.utils.tensorboard`` (which needs the ``tensorboard``
package, pinned in scripts/requirements.in). A restarted trainer adds a new
event file to the same folder; TensorBoard shows them as one run.

Held-out evaluations (``train.eval_every``) run beside training in parley;
each rides in the sidecar of the next batch written after it (the
``evals`` list of its metrics: ``{"step", "metrics": {"eval/…": …},
"samples"}``). Their scalars are logged at the evaluated step, under their
own ``eval/`` names, and the sample dialogues (markdown) as the text
``eval/samples``; W&B charts ``eval/*`` against ``eval/step``, since the
evaluated step is behind the step being logged.

W&B: never required. Only with ``wandb`` in report_to is the package
imported, at start, before the model loads; when it is missing the trainer
stops with a message naming the key. The API key is wandb's business: it
reads ``WANDB_API_KEY`` from the environment (parley passes that variable to
the trainer only when report_to has wandb, never to the inference server);
this module never reads, logs or writes it. The run goes to
``WANDB_PROJECT`` (default ``parley``), named after the run directory
(``WANDB_NAME`` overrides), its local files under ``RUN/wandb/``
(``WANDB_DIR`` overrides), with a run id kept in ``RUN/wandb/parley-run-id``
so that a restarted trainer resumes the same W&B run (``WANDB_RUN_ID``
overrides).
"""

from __future__ import annotations

import importlib
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, Protocol

from .atomic import write_atomic

TARGETS = ("tensorboard", "wandb")
NONE = "none"
DEFAULT = ("tensorboard",)
TRAINER_PREFIX = "trainer/"
PARLEY_PREFIX = "parley/"
WANDB_ID_FILE = "parley-run-id"
EVAL_STEP = "eval/step"
EVAL_SAMPLES = "eval/samples"


class ReportError(RuntimeError):
    """A report_to setting the trainer cannot honour."""


def parse_report_to(values: Sequence[str]) -> tuple[str, ...]:
    """The targets of --report-to: each value may be a comma list; ``none``
    alone means no target. Unknown, repeated or mixed-with-none values are a
    ReportError naming the key."""
    items = [p.strip() for v in values for p in v.split(",") if p.strip()]
    if not items:
        raise ReportError(f"trainer.report_to (--report-to) is empty: name {', '.join(TARGETS)} or {NONE}")
    for it in items:
        if it != NONE and it not in TARGETS:
            raise ReportError(f"trainer.report_to (--report-to): {it!r} is not one of {', '.join((*TARGETS, NONE))}")
    if NONE in items:
        if len(items) > 1:
            raise ReportError(f"trainer.report_to (--report-to): {NONE} cannot be combined with {', '.join(i for i in items if i != NONE)}")
        return ()
    if len(set(items)) != len(items):
        raise ReportError(f"trainer.report_to (--report-to) names a target twice: {','.join(items)}")
    return tuple(items)


def require_wandb() -> ModuleType:
    """Import wandb or fail with a message that says what to do."""
    try:
        wandb = importlib.import_module("wandb")
    except ImportError as e:
        raise ReportError(
            "trainer.report_to (--report-to) includes wandb, but the wandb package is not installed in this "
            "Python environment: pip install wandb there (parley does not install it), or remove wandb from "
            f"trainer.report_to ({e})"
        ) from e
    return wandb


def check(targets: Iterable[str]) -> None:
    """Fail at start, before the model loads, when a target cannot work."""
    if "wandb" in targets:
        require_wandb()


def flatten(metrics: Mapping[str, Any], prefix: str, skip: Iterable[str] = ()) -> dict[str, float]:
    """The scalar values of metrics under prefix: numbers as floats, booleans
    as 0/1, nested mappings joined with '/'; strings, lists and nulls are
    left out."""
    out: dict[str, float] = {}
    skipped = set(skip)
    for k, v in metrics.items():
        if k in skipped:
            continue
        name = prefix + str(k)
        if isinstance(v, bool):
            out[name] = 1.0 if v else 0.0
        elif isinstance(v, (int, float)):
            out[name] = float(v)
        elif isinstance(v, Mapping):
            out.update(flatten(v, name + "/"))
    return out


def step_scalars(trainer_metrics: Mapping[str, Any], parley_metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """One step's scalars: the trainer's under trainer/, parley's under
    parley/ (its step field is the logging step itself, not a scalar)."""
    out = flatten(trainer_metrics, TRAINER_PREFIX)
    if parley_metrics:
        out.update(flatten(parley_metrics, PARLEY_PREFIX, skip=("step",)))
    return out


class Eval(NamedTuple):
    """One held-out evaluation handed with a step's metrics."""

    step: int
    scalars: dict[str, float]
    samples: str


def step_evals(parley_metrics: Mapping[str, Any] | None) -> list[Eval]:
    """The evaluations in a step's parley metrics (their ``evals`` list);
    entries without an integer step are left out."""
    out: list[Eval] = []
    for e in (parley_metrics or {}).get("evals") or []:
        if not isinstance(e, Mapping) or not isinstance(e.get("step"), int) or isinstance(e.get("step"), bool):
            continue
        samples = e.get("samples")
        out.append(Eval(e["step"], flatten(e.get("metrics") or {}, ""), samples if isinstance(samples, str) else ""))
    return out


class Reporter(Protocol):
    """A place scalars go."""

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        """Record scalars at step, durably enough that a crash after the call
        loses nothing."""
        ...

    def log_eval(self, ev: Eval, at: int) -> None:
        """Record an evaluation of step ev.step, learnt of at step at."""
        ...

    def close(self) -> None:
        """Flush and release."""
        ...


class TensorBoardReporter:
    """Scalars into TensorBoard event files under log_dir."""

    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = log_dir
        self.writer = SummaryWriter(log_dir=str(log_dir))

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        for name, value in scalars.items():
            self.writer.add_scalar(name, value, global_step=step)
        self.writer.flush()

    def log_eval(self, ev: Eval, at: int) -> None:
        for name, value in ev.scalars.items():
            self.writer.add_scalar(name, value, global_step=ev.step)
        if ev.samples:
            self.writer.add_text(EVAL_SAMPLES, ev.samples, global_step=ev.step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbReporter:
    """Scalars into a W&B run (the package must be installed)."""

    def __init__(self, run_dir: Path, config: Mapping[str, Any]) -> None:
        wandb = require_wandb()
        local = Path(os.environ["WANDB_DIR"]) if os.environ.get("WANDB_DIR") else run_dir
        wandb_dir = local / "wandb"
        wandb_dir.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT") or "parley",
            name=os.environ.get("WANDB_NAME") or run_dir.name,
            id=os.environ.get("WANDB_RUN_ID") or _run_id(wandb_dir / WANDB_ID_FILE),
            resume="allow",
            dir=str(local),
            config=dict(config),
        )
        define = getattr(self.run, "define_metric", None)
        if define is not None:
            define(EVAL_STEP)
            define("eval/*", step_metric=EVAL_STEP)

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.run.log(dict(scalars), step=step)

    def log_eval(self, ev: Eval, at: int) -> None:
        data: dict[str, Any] = {**ev.scalars, EVAL_STEP: ev.step}
        if ev.samples:
            data[EVAL_SAMPLES] = ev.samples
        self.run.log(data, step=at)

    def close(self) -> None:
        self.run.finish()


def _run_id(path: Path) -> str:
    """The W&B run id kept in path (made the first time): a restarted
    trainer resumes the same W&B run."""
    try:
        rid = path.read_text().strip()
        if rid:
            return rid
    except FileNotFoundError:
        pass
    rid = secrets.token_hex(8)
    write_atomic(path, (rid + "\n").encode())
    return rid


class Reporters:
    """Fan-out to every configured reporter; non-finite values are kept
    (a NaN loss is worth seeing)."""

    def __init__(self, reporters: Sequence[Reporter]) -> None:
        self.reporters = list(reporters)

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        if not scalars:
            return
        for r in self.reporters:
            r.log(step, scalars)

    def log_eval(self, evals: Iterable[Eval], at: int) -> None:
        for ev in evals:
            for r in self.reporters:
                r.log_eval(ev, at)

    def close(self) -> None:
        for r in self.reporters:
            r.close()


def open_reporters(targets: Iterable[str], run_dir: Path, tensorboard_dir: Path | None, config: Mapping[str, Any]) -> Reporters:
    """The reporters of targets; tensorboard_dir defaults to RUN/tensorboard."""
    out: list[Reporter] = []
    for t in targets:
        if t == "tensorboard":
            out.append(TensorBoardReporter(tensorboard_dir or run_dir / "tensorboard"))
        elif t == "wandb":
            out.append(WandbReporter(run_dir, config))
        else:
            raise ReportError(f"trainer.report_to: unknown target {t!r}")
    return Reporters(out)
