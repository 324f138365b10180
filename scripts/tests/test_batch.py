"""Batch reading and validation (pyarrow round trips, no model)."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parley_trainer.batch import ARROW_SCHEMA, BatchError, Ready, arrow_schema, parse_batch, sha256_hex, write_batch
from parley_trainer.packing import collate, pack_micro_batches


def _rows() -> list[dict]:
    return [
        {
            "input_ids": [5, 6, 7, 8],
            "loss_mask": [0, 0, 1, 1],
            "inference_logprobs": [0.0, 0.0, -1.5, -2.0],
            "advantages": [0.0, 0.0, 0.5, 0.5],
            "reward": 1.0,
            "temperature": 0.7,
        },
        {
            "input_ids": [9, 10, 11],
            "loss_mask": [0, 1, 0],
            "inference_logprobs": [0.0, -0.25, 0.0],
            "advantages": [0.0, -0.5, 0.0],
            "reward": 0.0,
            "temperature": 0.7,
        },
    ]


def _full(rows: list[dict], step: int = 3) -> list[dict]:
    out = []
    for i, r in enumerate(rows):
        d = dict.fromkeys(("run_id", "sample_id", "group_id", "rollout_id", "prompt_id", "env", "role"), f"x{i}")
        d.update(step=step, policy_version=2, reward=r["reward"], temperature=r["temperature"])
        for c in ("input_ids", "loss_mask", "inference_logprobs", "advantages"):
            d[c] = r[c]
        # version 2's columns
        d["kind"] = "dialogue"
        d["advantage"] = next(a for a, m in zip(r["advantages"], r["loss_mask"]) if m)
        out.append(d)
    return out


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def test_write_then_parse_round_trip(tmp_path):
    ready = write_batch(str(tmp_path), 3, 2, _rows())
    data = (tmp_path / "batches" / "step-000003.parquet").read_bytes()
    marker = Ready.from_json((tmp_path / "batches" / "step-000003.ready").read_bytes())
    assert marker == ready
    assert marker.rows == 2 and marker.tokens == 7 and marker.sha256 == sha256_hex(data)
    b = parse_batch(data, marker, vocab_size=100)
    assert b.step == 3 and b.policy_version == 2
    assert [s.input_ids.tolist() for s in b.sequences] == [[5, 6, 7, 8], [9, 10, 11]]
    assert b.sequences[1].loss_mask.tolist() == [0, 1, 0]
    assert b.sequences[0].temperature == pytest.approx(0.7)
    assert b.masked_tokens == 3


def test_bool_mask_accepted():
    schema = ARROW_SCHEMA.set(ARROW_SCHEMA.get_field_index("loss_mask"), pa.field("loss_mask", pa.list_(pa.bool_())))
    rows = _full(_rows())
    for r in rows:
        r["loss_mask"] = [bool(m) for m in r["loss_mask"]]
    b = parse_batch(_parquet(pa.Table.from_pylist(rows, schema=schema)))
    assert b.sequences[0].loss_mask.tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize(
    "mutate, want",
    [
        (lambda s: s.remove(s.get_field_index("advantages")), "column advantages: missing"),
        (
            lambda s: s.set(s.get_field_index("input_ids"), pa.field("input_ids", pa.list_(pa.int64()))),
            "column input_ids: type list<int64>, want list<int32>",
        ),
        (lambda s: s.set(s.get_field_index("reward"), pa.field("reward", pa.float64())), "column reward: type double, want float"),
        (lambda s: s.set(s.get_field_index("step"), pa.field("step", pa.int64())), "column step: type int64, want int32"),
        (lambda s: s.set(s.get_field_index("role"), pa.field("role", pa.int32())), "column role: type int32, want string"),
    ],
)
def test_schema_errors_name_the_column(mutate, want):
    schema = mutate(ARROW_SCHEMA)
    rows = _full(_rows())
    names = set(schema.names)
    rows = [{k: (7 if k == "role" and schema.field("role").type == pa.int32() else v) for k, v in r.items() if k in names} for r in rows]
    data = _parquet(pa.Table.from_pylist(rows, schema=schema))
    with pytest.raises(BatchError) as e:
        parse_batch(data)
    assert want in str(e.value)


@pytest.mark.parametrize(
    "row_edit, want",
    [
        (lambda r: r.update(advantages=[0.0, 0.5]), "column advantages: row 1 has 2 tokens, input_ids 3"),
        (lambda r: r.update(loss_mask=[0, 2, 0]), "column loss_mask: row 1 token 1 is 2"),
        (lambda r: r.update(loss_mask=[1, 1, 0]), "row 1 token 0 is 1"),
        (lambda r: r.update(input_ids=[9, 10, 500]), "column input_ids: row 1 token 2 is 500"),
        (lambda r: r.update(inference_logprobs=[0.0, float("nan"), 0.0]), "column inference_logprobs: row 1"),
        (lambda r: r.update(temperature=-1.0), "column temperature: row 1"),
    ],
)
def test_row_errors_name_column_and_row(row_edit, want):
    rows = _full(_rows())
    row_edit(rows[1])
    data = _parquet(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA))
    with pytest.raises(BatchError) as e:
        parse_batch(data, vocab_size=100)
    assert want in str(e.value)


def test_marker_mismatches(tmp_path):
    ready = write_batch(str(tmp_path), 3, 2, _rows())
    data = (tmp_path / "batches" / "step-000003.parquet").read_bytes()
    bad_sha = Ready(**{**ready.to_dict(), "sha256": "0" * 64})
    with pytest.raises(BatchError, match="sha256"):
        parse_batch(data, bad_sha)
    bad_rows = Ready(**{**ready.to_dict(), "rows": 5})
    with pytest.raises(BatchError, match="2 rows, the ready marker says 5"):
        parse_batch(data, bad_rows)
    with pytest.raises(BatchError, match="schema_version 3, want 1 to 2"):
        Ready.from_json(json.dumps({**ready.to_dict(), "schema_version": 3}))
    with pytest.raises(BatchError, match="the file's schema_version 2 differs from the ready marker's 1"):
        parse_batch(data, Ready(**{**ready.to_dict(), "schema_version": 1}))
    with pytest.raises(BatchError, match="step is"):
        Ready.from_json(json.dumps({**ready.to_dict(), "step": "3"}))


def test_schema_version_metadata_required():
    rows = _full(_rows())
    table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA.remove_metadata())
    with pytest.raises(BatchError, match="schema_version"):
        parse_batch(_parquet(table))
    table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA.with_metadata({b"schema_version": b"3"}))
    with pytest.raises(BatchError, match="schema_version 3, want 1 to 2"):
        parse_batch(_parquet(table))


def test_version_1_still_read(tmp_path):
    ready = write_batch(str(tmp_path), 3, 2, _rows(), version=1)
    data = (tmp_path / "batches" / "step-000003.parquet").read_bytes()
    assert ready.schema_version == 1 and pq.ParquetFile(io.BytesIO(data)).schema_arrow.metadata[b"schema_version"] == b"1"
    assert "kind" not in pq.ParquetFile(io.BytesIO(data)).schema_arrow.names
    b = parse_batch(data, ready, vocab_size=100)
    assert b.masked_tokens == 3 and b.sequences[0].kind == ""


def test_version_2_columns(tmp_path):
    rows = _rows()
    rows[1]["kind"] = "final"
    ready = write_batch(str(tmp_path), 3, 2, rows)
    assert ready.schema_version == 2
    b = parse_batch((tmp_path / "batches" / "step-000003.parquet").read_bytes(), ready)
    assert [s.kind for s in b.sequences] == ["dialogue", "final"]


@pytest.mark.parametrize(
    "edit, want",
    [
        (
            lambda rows, schema: ([{k: v for k, v in r.items() if k != "kind"} for r in rows], schema.remove(schema.get_field_index("kind"))),
            "column kind: missing (schema version 2)",
        ),
        (
            lambda rows, schema: ([{**r, "kind": 1} for r in rows], schema.set(schema.get_field_index("kind"), pa.field("kind", pa.int32()))),
            "column kind: type int32, want string",
        ),
        (
            lambda rows, schema: (rows, schema.set(schema.get_field_index("advantage"), pa.field("advantage", pa.float64()))),
            "column advantage: type double, want float",
        ),
        (lambda rows, schema: ([{**r, "advantage": float("inf")} for r in rows], schema), "column advantage: row 0 is inf"),
    ],
)
def test_version_2_errors_name_the_column(edit, want):
    rows, schema = edit(_full(_rows()), arrow_schema(2))
    with pytest.raises(BatchError) as e:
        parse_batch(_parquet(pa.Table.from_pylist(rows, schema=schema)))
    assert want in str(e.value)


@pytest.mark.parametrize(
    "lengths, budget, want",
    [
        ([4, 3, 2, 1], 6, [[0], [1, 2], [3]]),
        ([4, 3, 2, 1], 0, [[0, 1, 2, 3]]),
        ([2, 2, 2, 2], 4, [[0, 1], [2, 3]]),
        ([10, 1], 4, [[0], [1]]),
        ([], 8, []),
    ],
)
def test_pack_micro_batches(lengths, budget, want):
    got = pack_micro_batches(lengths, budget)
    assert got == want, f"pack_micro_batches({lengths}, {budget}) = {got}, want {want}"
    assert sorted(i for g in got for i in g) == list(range(len(lengths)))


def test_collate_pads_right_with_zero_mask_and_weight():
    b = parse_batch(_parquet(pa.Table.from_pylist(_full(_rows()), schema=ARROW_SCHEMA)))
    w = [np.array([0, 0, 0.5, 0.5], np.float32), np.array([0, 1.0, 0], np.float32)]
    mb = collate(b.sequences, w, pad_id=0)
    assert mb.input_ids.tolist() == [[5, 6, 7, 8], [9, 10, 11, 0]]
    assert mb.attention_mask.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert mb.loss_mask.tolist() == [[0, 0, 1, 1], [0, 1, 0, 0]]
    assert mb.weights[1].tolist() == [0, 1.0, 0, 0]
    dummy = collate(b.sequences, w, pad_id=0, zero_weights=True)
    assert float(dummy.weights.abs().sum()) == 0.0 and float(dummy.loss_mask.sum()) == 0.0


def test_lora_target_modules_resolution():
    import torch

    from parley_trainer.modeling import resolve_target_modules

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q_proj = torch.nn.Linear(2, 2)
            self.down_proj = torch.nn.Linear(2, 2)
            self.norm = torch.nn.LayerNorm(2)

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([Block(), Block()])
            self.lm_head = torch.nn.Linear(2, 5)

    m = M()
    assert resolve_target_modules(m, "all-linear") == ["down_proj", "q_proj"]
    assert resolve_target_modules(m, ["all-linear", "lm_head"]) == ["down_proj", "lm_head", "q_proj"]
    assert resolve_target_modules(m, ["q_proj"]) == ["q_proj"]


def test_token_versions_staleness(tmp_path):
    """Issue 19, item 3: a batch's token_versions column gives each trained
    token its staleness (step - 1 - version); a batch without it is on the
    row's policy version."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from parley_trainer.batch import parse_batch, staleness, write_batch

    rows = [{"input_ids": [1, 2, 3, 4], "loss_mask": [0, 1, 1, 1], "inference_logprobs": [0, -1, -1, -1], "advantages": [0, 1, 1, 1]}]
    ready = write_batch(str(tmp_path), 3, 2, rows)
    path = tmp_path / "batches" / "step-000003.parquet"
    old = parse_batch(path.read_bytes(), ready)
    assert staleness(old.sequences[0], 3).tolist() == [0, 0, 0, 0]
    table = pq.read_table(path)
    table = table.append_column("token_versions", pa.array([[2, 1, 2, 0]], type=pa.list_(pa.int32())))
    pq.write_table(table, path)
    new = parse_batch(path.read_bytes(), None)
    assert np.asarray(new.sequences[0].versions).tolist() == [2, 1, 2, 0]
    assert staleness(new.sequences[0], 3).tolist() == [0, 1, 0, 2]
    # the column is optional: a null row (a writer that recorded no
    # versions, as Go writes a row without them) is on the row's policy
    # version, like a file without the column
    table = pq.read_table(path).drop_columns(["token_versions"])
    table = table.append_column("token_versions", pa.array([None], type=pa.list_(pa.int32())))
    pq.write_table(table, path)
    null = parse_batch(path.read_bytes(), None)
    assert np.asarray(null.sequences[0].versions).tolist() == [2, 2, 2, 2]
    assert staleness(null.sequences[0], 3).tolist() == [0, 0, 0, 0]
