"""The parquet parley (Go) writes, read here as the trainer and users read it:
pyarrow sees the batch contract's column types (the schema version Go writes,
1 or 2), the trainer parses it, nested rollout records are lists, and Hugging
Face datasets loads the export folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH")
    out = tmp_path_factory.mktemp("go-parquet")
    env = dict(os.environ, PARLEY_PARQUET_FIXTURE_DIR=str(out))
    subprocess.run(
        ["go", "test", "-count=1", "-run", "^TestWriteFixtures$", "./dataset"],
        cwd=REPO, env=env, check=True, capture_output=True,
    )
    return out


def test_batch_contract_types(fixtures: Path) -> None:
    expected = json.loads((fixtures / "expected.json").read_text())
    path = fixtures / "batches" / "step-000001.parquet"
    f = pq.ParquetFile(path)
    version = int(f.schema_arrow.metadata[b"schema_version"])
    assert version in (1, 2)
    want = {
        "run_id": pa.string(), "sample_id": pa.string(), "group_id": pa.string(),
        "rollout_id": pa.string(), "prompt_id": pa.string(),
        "step": pa.int32(), "policy_version": pa.int32(),
        "env": pa.string(), "role": pa.string(),
        "reward": pa.float32(), "temperature": pa.float32(),
    }
    if version >= 2:
        want.update(kind=pa.string(), advantage=pa.float32())
    lists = {"input_ids": pa.int32(), "loss_mask": pa.int8(), "inference_logprobs": pa.float32(), "advantages": pa.float32()}
    schema = f.schema_arrow
    for name, typ in want.items():
        assert schema.field(name).type == typ, (name, schema.field(name).type)
    for name, typ in lists.items():
        t = schema.field(name).type
        assert pa.types.is_list(t) and t.value_type == typ, (name, t)
    assert f.metadata.row_group(0).column(0).compression == "ZSTD"
    table = f.read()
    assert table.num_rows == expected["batch"]["ready"]["rows"]
    rows = table.to_pylist()
    first = expected["batch"]["first_row"]
    assert rows[0]["input_ids"] == first["input_ids"]
    assert rows[0]["loss_mask"] == first["loss_mask"]
    assert rows[0]["advantages"] == pytest.approx(first["advantages"])
    ready = json.loads((fixtures / "batches" / "step-000001.ready").read_text())
    assert ready["schema_version"] == version
    assert ready["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert ready["tokens"] == sum(len(r["input_ids"]) for r in rows)
    # ... and the trainer takes it
    from parley_trainer.batch import Ready, parse_batch

    b = parse_batch(path.read_bytes(), Ready.from_json(json.dumps(ready)))
    assert len(b.sequences) == ready["rows"]


def test_rollouts_nested_lists(fixtures: Path) -> None:
    t = pq.read_table(fixtures / "rollouts" / "step-000001.parquet")
    seq = t.schema.field("sequences").type
    assert pa.types.is_list(seq)
    el = seq.value_type
    assert el.field("input_ids").type.value_type == pa.int32()
    assert el.field("loss_mask").type.value_type == pa.int8()
    assert el.field("logprobs").type.value_type == pa.float32()
    assert pa.types.is_list(t.schema.field("turns").type)
    row = t.slice(0, 1).to_pylist()[0]
    for s in row["sequences"]:
        assert len(s["input_ids"]) == len(s["loss_mask"]) == len(s["logprobs"])


def test_hf_export_loads_with_datasets(fixtures: Path) -> None:
    datasets = pytest.importorskip("datasets")
    expected = json.loads((fixtures / "expected.json").read_text())
    folder = fixtures / "export-hf"
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n") and "configs:" in card and "data_files" in card
    ds = datasets.load_dataset(str(folder), split="train")
    assert ds.num_rows == expected["export_hf_rows"]
    feats = ds.features
    assert isinstance(feats["messages"], datasets.List), feats["messages"]
    rec = ds[0]
    assert isinstance(rec["messages"], list) and rec["messages"][0]["role"] == "system"
    first = expected["export_first_record"]
    assert rec["task"] == first["task"]


def test_jsonl_export(fixtures: Path) -> None:
    expected = json.loads((fixtures / "expected.json").read_text())
    lines = (fixtures / "export-jsonl" / "rollouts.jsonl").read_text().splitlines()
    assert len(lines) == expected["export_jsonl_rows"]
    rec = json.loads(lines[0])
    assert {"messages", "final", "reward", "task"} <= rec.keys()
