"""parley export's JSONL and Hugging Face folder, read as users read them:
polars concatenates two exports made with different judges (a reward is
always a float, also when it is integral), and Hugging Face datasets infers
the messages as a list of structs (every message has the same keys), not as
JSON. The exports are made by the Go side as a user makes them: parley
rollout against serve-sim, parley score, parley export
(cmd/parley TestWriteExportFixtures)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH")
    out = tmp_path_factory.mktemp("exports")
    env = dict(os.environ, PARLEY_EXPORT_FIXTURE_DIR=str(out))
    subprocess.run(
        ["go", "test", "-count=1", "-run", "^TestWriteExportFixtures$", "./cmd/parley"],
        cwd=REPO, env=env, check=True, capture_output=True,
    )
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_numbers_are_floats_in_the_text(exports: Path) -> None:
    # The CA judge's scores are integral; the file still writes them as floats.
    text = (exports / "ca.jsonl").read_text()
    assert '"score":5.0' in text or '"score":4.0' in text or '"score":3.0' in text
    for rec in _lines(exports / "ca.jsonl"):
        assert rec["score_scale"] == "CA 1–5"
        assert isinstance(rec["score"], float) and isinstance(rec["reward"], float)
        assert isinstance(rec["advantage"], float)
    for rec in _lines(exports / "rule.jsonl"):
        assert rec["score_scale"] == "rule length 0–1"


def test_polars_concat(exports: Path) -> None:
    pl = pytest.importorskip("polars")
    ca = pl.read_ndjson(exports / "ca.jsonl")
    rule = pl.read_ndjson(exports / "rule.jsonl")
    unjudged = pl.read_ndjson(exports / "unjudged.jsonl")
    for df in (ca, rule):
        for col in ("score", "reward", "advantage"):
            assert df.schema[col] == pl.Float64, (col, df.schema[col])
        assert df.schema["step"] == pl.Int64 and df.schema["policy_version"] == pl.Int64
    both = pl.concat([ca, rule])
    assert both.height == ca.height + rule.height
    assert both.schema["score"] == pl.Float64
    assert set(both["score_scale"].unique().to_list()) == {"CA 1–5", "rule length 0–1"}
    # Unjudged rollouts carry null scores, never 0, and still concatenate.
    assert unjudged["score"].null_count() == unjudged.height
    assert unjudged["judged"].sum() == 0
    everything = pl.concat([ca, rule, unjudged])
    assert everything.height == ca.height + rule.height + unjudged.height
    assert everything["score"].null_count() == unjudged.height


def test_messages_are_structs(exports: Path) -> None:
    datasets = pytest.importorskip("datasets")
    files = [str(exports / "ca.jsonl"), str(exports / "rule.jsonl")]
    ds = datasets.load_dataset("json", data_files=files, split="train")
    feats = ds.features
    msgs = feats["messages"]
    assert isinstance(msgs, datasets.List), msgs
    assert isinstance(msgs.feature, dict), msgs.feature  # a struct, not Json
    assert set(msgs.feature) == {"role", "name", "content"}
    assert feats["score"].dtype == "float64" and feats["policy_version"].dtype == "int64"
    rec = ds[0]
    roles = [m["role"] for m in rec["messages"]]
    assert roles[:3] == ["system", "system", "system"] and "user" in roles
    assert rec["messages"][0]["name"] == "A"
    user = next(m for m in rec["messages"] if m["role"] == "user")
    assert user["name"] is None and user["content"] == rec["task"]
    assert rec["personas"]["name_a"] and rec["persona_pair_id"].startswith("p")
    assert rec["split"] == "train" and rec["judge_model"] == "sim-judge"


def test_hf_folder(exports: Path) -> None:
    datasets = pytest.importorskip("datasets")
    folder = exports / "ca-hf"
    card = (folder / "README.md").read_text()
    assert "Scores: CA 1–5" in card
    ds = datasets.load_dataset(str(folder), split="train")
    assert isinstance(ds.features["messages"].feature, dict)
    assert ds.features["score"].dtype == "float32"
    assert ds.features["personas"]["name_a"].dtype == "string"
    assert all(r["judged"] and r["score"] is not None for r in ds)
