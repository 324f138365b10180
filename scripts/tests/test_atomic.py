"""The one atomic writer (parley_trainer.atomic): Go's temp-file names, the
destination untouched by a failure mid-write, and every writer using it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from parley_trainer import atomic
from parley_trainer.atomic import is_temp, make_temp_dir, open_atomic, write_atomic, write_dir
from parley_trainer.batch import write_batch
from parley_trainer.checkpoint import begin_checkpoint, checkpoint_dir, commit_checkpoint, read_done


def go_is_temp(name: str) -> bool:
    """Go's fsutil.IsTemp, which fsutil.RemoveTemps (train/run.go's
    cleanTemps) removes regular files by, written out here."""
    return name.startswith(".") and ".tmp-" in name


def go_pattern(base: str) -> re.Pattern[str]:
    """Go's os.CreateTemp(dir, "." + base + ".tmp-*"): the "*" is a random part."""
    return re.compile(re.escape("." + base + ".tmp-") + r"[A-Za-z0-9_]+$")


def test_temp_name_is_gos(tmp_path: Path) -> None:
    dest = tmp_path / "step-000001.parquet"
    with open_atomic(dest) as f:
        f.write(b"half")
        names = os.listdir(tmp_path)
        assert len(names) == 1, names
        assert go_pattern(dest.name).match(names[0]), names[0]
        assert go_is_temp(names[0]) and is_temp(names[0])
        assert not dest.exists()
    assert dest.read_bytes() == b"half"
    assert os.listdir(tmp_path) == [dest.name]
    assert not is_temp(dest.name) and not go_is_temp(dest.name)


def test_write_atomic_replaces_with_gos_mode(tmp_path: Path) -> None:
    dest = tmp_path / "state.json"
    dest.write_bytes(b"old")
    write_atomic(dest, b"new")
    assert dest.read_bytes() == b"new"
    assert dest.stat().st_mode & 0o777 == 0o644
    assert os.listdir(tmp_path) == ["state.json"]


def test_failure_mid_write_leaves_destination_untouched(tmp_path: Path) -> None:
    dest = tmp_path / "step-000001.ready"
    dest.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="mid-write"), open_atomic(dest) as f:
        f.write(b"new, half written")
        raise RuntimeError("mid-write")
    assert dest.read_bytes() == b"old"
    assert os.listdir(tmp_path) == [dest.name]


def test_failed_rename_leaves_destination_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "DONE"
    dest.write_bytes(b"old")

    def fail(src: str, dst: str) -> None:
        raise OSError("rename failed")

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(OSError, match="rename failed"):
        write_atomic(dest, b"new")
    assert dest.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["DONE"]


def test_crash_mid_write_leaves_a_temp_file_go_removes(tmp_path: Path) -> None:
    """A process killed mid-write: the destination is the old one, and the
    one leftover is a regular file Go's RemoveTemps recognises."""
    dest = tmp_path / "step-000002.parquet"
    dest.write_bytes(b"old")
    code = (
        "import os, sys\n"
        "from parley_trainer.atomic import open_atomic\n"
        "with open_atomic(sys.argv[1]) as f:\n"
        "    f.write(b'new, half written'); f.flush()\n"
        "    os._exit(3)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(atomic.__file__).parent.parent), os.environ.get("PYTHONPATH", "")])}
    rc = subprocess.run([sys.executable, "-c", code, str(dest)], env=env, check=False).returncode
    assert rc == 3
    assert dest.read_bytes() == b"old"
    left = sorted(set(os.listdir(tmp_path)) - {dest.name})
    assert len(left) == 1, left
    assert go_pattern(dest.name).match(left[0]) and go_is_temp(left[0])
    assert (tmp_path / left[0]).is_file()


def test_write_dir_failure_leaves_the_old_folder(tmp_path: Path) -> None:
    out = tmp_path / "model"
    write_dir(out, lambda d: (d / "config.json").write_text("{}"))
    assert sorted(os.listdir(out)) == ["config.json"]
    assert (out / "config.json").stat().st_mode & 0o777 == 0o644
    assert out.stat().st_mode & 0o777 == 0o755

    seen: list[str] = []

    def broken(d: Path) -> None:
        seen.append(d.name)
        (d / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("fill failed")

    with pytest.raises(RuntimeError, match="fill failed"):
        write_dir(out, broken)
    assert go_pattern("model").match(seen[0]) and go_is_temp(seen[0])
    assert sorted(os.listdir(tmp_path)) == ["model"]
    assert sorted(os.listdir(out)) == ["config.json"]

    write_dir(out, lambda d: (d / "weights.bin").write_bytes(b"w"))
    assert sorted(os.listdir(out)) == ["weights.bin"]
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_batch_writer_renames_gos_temp_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renamed: list[tuple[str, str]] = []
    replace = os.replace

    def spy(src: str, dst: str) -> None:
        renamed.append((os.path.basename(src), os.path.basename(dst)))
        replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", spy)
    rows = [{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "inference_logprobs": [0.0, -1.0, -1.0], "advantages": [0.0, 1.0, 1.0]}]
    write_batch(str(tmp_path), 1, 0, rows)
    assert [d for _, d in renamed] == ["step-000001.parquet", "step-000001.ready"]
    for src, dst in renamed:
        assert go_pattern(dst).match(src), (src, dst)
    assert sorted(os.listdir(tmp_path / "batches")) == ["step-000001.parquet", "step-000001.ready"]


def test_checkpoint_folder_and_done(tmp_path: Path) -> None:
    final = checkpoint_dir(tmp_path, 3)
    stale = make_temp_dir(final)  # an interrupted save of step 3
    (stale / "adapter_model.safetensors").write_bytes(b"half")
    tmp = begin_checkpoint(tmp_path, 3)
    assert go_pattern("step-000003").match(tmp.name) and tmp.parent == final.parent
    assert not stale.exists()
    (tmp / "adapter_model.safetensors").write_bytes(b"w")
    commit_checkpoint(tmp_path, 3, tmp, {"step": 3, "policy_version": 3, "batch_policy_version": 2, "metrics": {}})
    assert sorted(os.listdir(final.parent)) == ["step-000003"]
    assert sorted(os.listdir(final)) == ["DONE", "adapter_model.safetensors"]
    done = read_done(final)
    assert done is not None and done["step"] == 3
