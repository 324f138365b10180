"""Reading and validating one step's batch: the parquet file of the batch
contract (schema versions 1 and 2) and its .ready marker.

Version 2 added two columns: kind (string: "dialogue" or "final") and
advantage (float: the role's scalar advantage, the value on every mask-1
token of advantages). The trainer checks their types and that advantage is
finite, and trains on the per-token advantages as before (parley's writer
does not check kind's values or advantage against advantages, so neither
does the reader). Version 1 files are still read.

Errors are BatchError and name the column (with the type found and the type
wanted) or the row (counted from 0).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import write_atomic

SCHEMA_VERSION = 2  # the version written (write_batch)
MIN_SCHEMA_VERSION = 1  # the oldest version read
SCHEMA_VERSION_KEY = b"schema_version"

STRING_COLUMNS = ("run_id", "sample_id", "group_id", "rollout_id", "prompt_id", "env", "role")
INT32_COLUMNS = ("step", "policy_version")
FLOAT32_COLUMNS = ("reward", "temperature")
LIST_COLUMNS = ("input_ids", "loss_mask", "inference_logprobs", "advantages")
REQUIRED_COLUMNS = STRING_COLUMNS + INT32_COLUMNS + LIST_COLUMNS + FLOAT32_COLUMNS
# Added in version 2.
V2_STRING_COLUMNS = ("kind",)
V2_FLOAT32_COLUMNS = ("advantage",)
# kind's values as parley writes them (not enforced: the trainer does not use
# kind, and parley's writer does not check it either)
KINDS = ("dialogue", "final")


def required_columns(version: int) -> tuple[str, ...]:
    """The columns a batch of this schema version must have."""
    return REQUIRED_COLUMNS + (V2_STRING_COLUMNS + V2_FLOAT32_COLUMNS if version >= 2 else ())


def _check_version(v: int, where: str) -> None:
    if not MIN_SCHEMA_VERSION <= v <= SCHEMA_VERSION:
        raise BatchError(f"{where}: schema_version {v}, want {MIN_SCHEMA_VERSION} to {SCHEMA_VERSION}")


class BatchError(ValueError):
    """A batch or .ready marker that breaks the contract."""


@dataclass(frozen=True)
class Ready:
    """The .ready marker written beside a batch."""

    schema_version: int
    step: int
    policy_version: int
    rows: int
    tokens: int
    sha256: str

    @classmethod
    def from_json(cls, data: bytes | str | dict[str, Any]) -> Ready:
        """Parse and check a marker (schema version, field types)."""
        try:
            obj = data if isinstance(data, dict) else json.loads(data)
        except json.JSONDecodeError as e:
            raise BatchError(f"ready marker: not JSON: {e}") from e
        if not isinstance(obj, dict):
            raise BatchError("ready marker: not a JSON object")
        vals: dict[str, Any] = {}
        for name in ("schema_version", "step", "policy_version", "rows", "tokens"):
            v = obj.get(name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise BatchError(f"ready marker: {name} is {v!r}, want an integer")
            vals[name] = v
        sha = obj.get("sha256", "")
        if not isinstance(sha, str):
            raise BatchError(f"ready marker: sha256 is {sha!r}, want a string")
        _check_version(vals["schema_version"], "ready marker")
        return cls(sha256=sha.lower(), **vals)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "step": self.step,
            "policy_version": self.policy_version,
            "rows": self.rows,
            "tokens": self.tokens,
            "sha256": self.sha256,
        }


@dataclass
class Sequence:
    """One training sequence (one batch row). Per-token arrays have equal
    lengths; loss_mask is 0/1 (int8)."""

    input_ids: np.ndarray  # int64 [L]
    loss_mask: np.ndarray  # int8 [L]
    inference_logprobs: np.ndarray  # float32 [L]
    advantages: np.ndarray  # float32 [L]
    reward: float
    temperature: float
    sample_id: str = ""
    group_id: str = ""
    role: str = ""
    kind: str = ""  # version 2: dialogue or final
    # Per token, the policy version whose weights sampled it (the optional
    # token_versions column; the row's policy_version where absent).
    versions: np.ndarray | None = None  # int32 [L]

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def masked_tokens(self) -> int:
        return int(self.loss_mask.sum())


@dataclass
class Batch:
    """A validated batch of one step."""

    step: int
    policy_version: int
    run_id: str
    sequences: list[Sequence] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(len(s) for s in self.sequences)

    @property
    def masked_tokens(self) -> int:
        return sum(s.masked_tokens for s in self.sequences)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _type_name(t: pa.DataType) -> str:
    """A short type name: list<int64>, float, double, string…"""
    vt = _list_value_type(t)
    if vt is not None:
        return f"list<{_type_name(vt)}>"
    return str(t)


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _list_value_type(t: pa.DataType) -> pa.DataType | None:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return t.value_type
    return None


def _row_versions(tv: tuple[np.ndarray, np.ndarray, np.ndarray] | None, r: int, n: int, policy_version: int) -> np.ndarray:
    """Row r's per-token versions from the token_versions column (offsets,
    values, valid rows), or policy_version on each of its n tokens when the
    column is absent (files written before it) or the row is null (a writer
    that recorded no versions: the column is optional)."""
    if tv is None or not tv[2][r]:
        return np.full(n, policy_version, dtype=np.int32)
    off, vals, _ = tv
    out = vals[int(off[r]) : int(off[r + 1])].astype(np.int32)
    if out.shape[0] != n:
        raise BatchError(f"column token_versions: row {r} has {out.shape[0]} tokens, input_ids {n}")
    return out


def _optional_list_column(table: pa.Table, col: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (offsets [rows+1], values, valid [rows]) of an optional list
    column: a null row is allowed (valid False), a null element is not."""
    arr = table.column(col).combine_chunks()
    if isinstance(arr, pa.ChunkedArray):  # empty table
        arr = pa.array([], type=arr.type)
    valid = np.asarray(arr.is_valid(), dtype=bool)
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    if arr.values.null_count:
        raise BatchError(f"column {col}: a row holds a null element")
    return offsets, np.asarray(arr.values.to_numpy(zero_copy_only=False)), valid


def staleness(seq: Sequence, step: int) -> np.ndarray:
    """Per token, how many updates lie between the policy that sampled it
    and the one step trains (step - 1): 0 on policy; 0 where the mask is 0."""
    v = seq.versions if seq.versions is not None else np.full(len(seq), step - 1, dtype=np.int32)
    return np.where(seq.loss_mask > 0, (step - 1) - v.astype(np.int64), 0)


def check_schema(schema: pa.Schema, version: int = SCHEMA_VERSION) -> None:
    """Check the contract's columns and types for a schema version; extra
    columns are allowed."""
    names = set(schema.names)
    for col in required_columns(version):
        if col not in names:
            raise BatchError(f"column {col}: missing (schema version {version})")
    v2 = version >= 2
    for col in STRING_COLUMNS + (V2_STRING_COLUMNS if v2 else ()):
        t = schema.field(col).type
        if not _is_string(t):
            raise BatchError(f"column {col}: type {_type_name(t)}, want string")
    for col in INT32_COLUMNS:
        t = schema.field(col).type
        if not pa.types.is_int32(t):
            raise BatchError(f"column {col}: type {_type_name(t)}, want int32")
    for col in FLOAT32_COLUMNS + (V2_FLOAT32_COLUMNS if v2 else ()):
        t = schema.field(col).type
        if not pa.types.is_float32(t):
            raise BatchError(f"column {col}: type {_type_name(t)}, want float")
    want = {
        "input_ids": ("list<int32>", pa.types.is_int32),
        "loss_mask": ("list<int8> or list<bool>", lambda v: pa.types.is_int8(v) or pa.types.is_boolean(v)),
        "inference_logprobs": ("list<float>", pa.types.is_float32),
        "advantages": ("list<float>", pa.types.is_float32),
    }
    for col, (desc, ok) in want.items():
        t = schema.field(col).type
        vt = _list_value_type(t)
        if vt is None or not ok(vt):
            raise BatchError(f"column {col}: type {_type_name(t)}, want {desc}")


def _list_column(table: pa.Table, col: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (offsets [rows+1], values) of a list column, rejecting nulls."""
    arr = table.column(col).combine_chunks()
    if isinstance(arr, pa.ChunkedArray):  # empty table
        arr = pa.array([], type=arr.type)
    if arr.null_count:
        row = int(np.flatnonzero(~np.asarray(arr.is_valid()))[0])
        raise BatchError(f"column {col}: row {row} is null")
    # Slicing-safe offsets and values.
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    values_arr = arr.values
    if values_arr.null_count:
        # find the row holding the first null element
        pos = int(np.flatnonzero(~np.asarray(values_arr.is_valid()))[0])
        row = int(np.searchsorted(offsets, pos, side="right") - 1)
        raise BatchError(f"column {col}: row {row} has a null element")
    values = values_arr.to_numpy(zero_copy_only=False)
    return offsets, values


def _scalar_column(table: pa.Table, col: str) -> list[Any]:
    arr = table.column(col)
    if arr.null_count:
        vals = arr.to_pylist()
        raise BatchError(f"column {col}: row {vals.index(None)} is null")
    out: list[Any] = arr.to_pylist()
    return out


def parse_batch(data: bytes, ready: Ready | None = None, vocab_size: int | None = None) -> Batch:
    """Parse and validate a batch parquet file.

    When ready is given, the file's sha256, row count, token count and step
    must match it. When vocab_size is given, every token id must be in
    [0, vocab_size).
    """
    if ready is not None and ready.sha256 and sha256_hex(data) != ready.sha256:
        raise BatchError(f"step {ready.step}: sha256 {sha256_hex(data)} does not match the ready marker's {ready.sha256}")
    try:
        pf = pq.ParquetFile(io.BytesIO(data))
    except (pa.ArrowInvalid, OSError) as e:
        raise BatchError(f"not a parquet file: {e}") from e
    meta = pf.schema_arrow.metadata or {}
    if SCHEMA_VERSION_KEY not in meta:
        raise BatchError(f"no {SCHEMA_VERSION_KEY.decode()!r} key-value metadata (want {MIN_SCHEMA_VERSION} to {SCHEMA_VERSION})")
    raw = meta[SCHEMA_VERSION_KEY].decode(errors="replace")
    try:
        version = int(raw)
    except ValueError:
        raise BatchError(f"schema_version {raw!r}, want {MIN_SCHEMA_VERSION} to {SCHEMA_VERSION}") from None
    _check_version(version, "parquet metadata")
    if ready is not None and ready.schema_version != version:
        raise BatchError(f"step {ready.step}: the file's schema_version {version} differs from the ready marker's {ready.schema_version}")
    check_schema(pf.schema_arrow, version)
    cols = required_columns(version)
    table = pf.read(columns=list(cols))
    n = table.num_rows
    if n == 0:
        # A step whose groups were all dropped: nothing to train, but the
        # step must still be answered with a checkpoint and DONE.
        if ready is not None and ready.rows != 0:
            raise BatchError(f"step {ready.step}: 0 rows, the ready marker says {ready.rows}")
        return Batch(step=ready.step if ready else 0, policy_version=ready.policy_version if ready else 0, run_id="")

    strings = {c: _scalar_column(table, c) for c in STRING_COLUMNS}
    steps = _scalar_column(table, "step")
    versions = _scalar_column(table, "policy_version")
    rewards = _scalar_column(table, "reward")
    temps = _scalar_column(table, "temperature")
    lists = {c: _list_column(table, c) for c in LIST_COLUMNS}
    kinds = _scalar_column(table, "kind") if version >= 2 else [""] * n
    tv = _optional_list_column(pf.read(columns=["token_versions"]), "token_versions") if "token_versions" in pf.schema_arrow.names else None
    scalar_adv = _scalar_column(table, "advantage") if version >= 2 else None

    ids_off = lists["input_ids"][0]
    for c in LIST_COLUMNS[1:]:
        off = lists[c][0]
        lens, want = np.diff(off), np.diff(ids_off)
        bad = np.flatnonzero(lens != want)
        if bad.size:
            r = int(bad[0])
            raise BatchError(f"column {c}: row {r} has {int(lens[r])} tokens, input_ids {int(want[r])}")

    step = int(steps[0])
    if ready is not None:
        if ready.rows != n:
            raise BatchError(f"step {ready.step}: {n} rows, the ready marker says {ready.rows}")
        tokens = int(ids_off[-1] - ids_off[0])
        if ready.tokens != tokens:
            raise BatchError(f"step {ready.step}: {tokens} tokens, the ready marker says {ready.tokens}")
        step = ready.step

    ids_all = lists["input_ids"][1].astype(np.int64, copy=False)
    mask_all = lists["loss_mask"][1]
    if mask_all.dtype == np.bool_:
        mask_all = mask_all.astype(np.int8)
    lp_all = lists["inference_logprobs"][1].astype(np.float32, copy=False)
    adv_all = lists["advantages"][1].astype(np.float32, copy=False)

    def sl(c: str, arr: np.ndarray, r: int) -> np.ndarray:
        """Row r's slice of column c's flat values."""
        off = lists[c][0]
        return arr[int(off[r]) : int(off[r + 1])]

    seqs: list[Sequence] = []
    for r in range(n):
        if steps[r] != step:
            raise BatchError(f"column step: row {r} has step {steps[r]}, want {step}")
        lo, hi = int(ids_off[r]), int(ids_off[r + 1])
        if hi == lo:
            raise BatchError(f"column input_ids: row {r} is empty")
        ids = ids_all[lo:hi]
        mask = sl("loss_mask", mask_all, r)
        lp = sl("inference_logprobs", lp_all, r)
        adv = sl("advantages", adv_all, r)
        if ((mask != 0) & (mask != 1)).any():
            i = int(np.flatnonzero((mask != 0) & (mask != 1))[0])
            raise BatchError(f"column loss_mask: row {r} token {i} is {int(mask[i])}, want 0 or 1")
        if mask[0] != 0:
            raise BatchError(f"column loss_mask: row {r} token 0 is 1, but the first token has no context to be trained from")
        if (ids < 0).any() or (vocab_size is not None and (ids >= vocab_size).any()):
            i = int(np.flatnonzero((ids < 0) | (ids >= (vocab_size or np.iinfo(np.int64).max)))[0])
            raise BatchError(f"column input_ids: row {r} token {i} is {int(ids[i])}, outside the vocabulary [0, {vocab_size})")
        on = mask.astype(bool)
        if not np.isfinite(lp[on]).all():
            raise BatchError(f"column inference_logprobs: row {r} has a non-finite logprob on a masked token")
        if (lp[on] > 1e-3).any():
            raise BatchError(f"column inference_logprobs: row {r} has a positive logprob on a masked token")
        if not np.isfinite(adv[on]).all():
            raise BatchError(f"column advantages: row {r} has a non-finite advantage on a masked token")
        if scalar_adv is not None and not math.isfinite(scalar_adv[r]):
            raise BatchError(f"column advantage: row {r} is {scalar_adv[r]}, want a finite value")
        t = float(temps[r])
        if not math.isfinite(t) or t < 0:
            raise BatchError(f"column temperature: row {r} is {t}, want a finite value >= 0")
        seqs.append(
            Sequence(
                input_ids=ids.copy(),
                loss_mask=mask.astype(np.int8, copy=True),
                inference_logprobs=np.where(on, lp, 0.0).astype(np.float32),
                advantages=np.where(on, adv, 0.0).astype(np.float32),
                reward=float(rewards[r]),
                temperature=t,
                sample_id=strings["sample_id"][r],
                group_id=strings["group_id"][r],
                role=strings["role"][r],
                kind=kinds[r],
                versions=_row_versions(tv, r, hi - lo, int(versions[r])),
            )
        )
    pv = ready.policy_version if ready is not None else int(versions[0])
    return Batch(step=step, policy_version=pv, run_id=strings["run_id"][0], sequences=seqs)


def arrow_schema(version: int = SCHEMA_VERSION) -> pa.Schema:
    """The Arrow schema of the contract at a version, for writing batches
    (tests, tools)."""
    return pa.schema(
        [(c, pa.string()) for c in ("run_id", "sample_id", "group_id", "rollout_id", "prompt_id")]
        + [("step", pa.int32()), ("policy_version", pa.int32()), ("env", pa.string()), ("role", pa.string())]
        + ([("kind", pa.string())] if version >= 2 else [])
        + [
            ("input_ids", pa.list_(pa.int32())),
            ("loss_mask", pa.list_(pa.int8())),
            ("inference_logprobs", pa.list_(pa.float32())),
            ("advantages", pa.list_(pa.float32())),
            ("reward", pa.float32()),
        ]
        + ([("advantage", pa.float32())] if version >= 2 else [])
        + [("temperature", pa.float32())],
        metadata={SCHEMA_VERSION_KEY: str(version).encode()},
    )


ARROW_SCHEMA = arrow_schema()


def write_batch(run_dir: str, step: int, policy_version: int, rows: list[dict[str, Any]], version: int = SCHEMA_VERSION) -> Ready:
    """Write batches/step-N.parquet and its .ready marker as parley does
    (zstd, atomic.write_atomic: temp name then rename, marker last), at a schema version. For
    tests and tools.

    Each row is a dict with at least input_ids, loss_mask,
    inference_logprobs and advantages; other columns get defaults (version
    2: kind "dialogue", advantage the value on the first mask-1 token).
    """
    import os

    def scalar_advantage(r: dict[str, Any]) -> float:
        for a, m in zip(r["advantages"], r["loss_mask"]):
            if m:
                return float(a)
        return 0.0

    full = []
    for i, r in enumerate(rows):
        full.append(
            {
                "run_id": r.get("run_id", "run"),
                "sample_id": r.get("sample_id", f"s{i}"),
                "group_id": r.get("group_id", "g0"),
                "rollout_id": r.get("rollout_id", f"r{i}"),
                "prompt_id": r.get("prompt_id", "p0"),
                "step": r.get("step", step),
                "policy_version": r.get("policy_version", policy_version),
                "env": r.get("env", "test"),
                "role": r.get("role", "single"),
                "input_ids": [int(x) for x in r["input_ids"]],
                "loss_mask": [int(x) for x in r["loss_mask"]],
                "inference_logprobs": [float(x) for x in r["inference_logprobs"]],
                "advantages": [float(x) for x in r["advantages"]],
                "reward": float(r.get("reward", 0.0)),
                "temperature": float(r.get("temperature", 1.0)),
            }
        )
        if version >= 2:
            full[-1]["kind"] = r.get("kind", "dialogue")
            full[-1]["advantage"] = float(r.get("advantage", scalar_advantage(r)))
    table = pa.Table.from_pylist(full, schema=arrow_schema(version))
    bdir = os.path.join(run_dir, "batches")
    os.makedirs(bdir, exist_ok=True)
    name = f"step-{step:06d}"
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue()
    write_atomic(os.path.join(bdir, name + ".parquet"), data)
    ready = Ready(
        schema_version=version,
        step=step,
        policy_version=policy_version,
        rows=len(full),
        tokens=sum(len(r["input_ids"]) for r in full),
        sha256=sha256_hex(data),
    )
    write_atomic(os.path.join(bdir, name + ".ready"), (json.dumps(ready.to_dict(), indent=2) + "\n").encode())
    return ready
