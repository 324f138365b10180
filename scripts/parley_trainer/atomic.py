"""Crash-safe writes, by the rule of parley's Go writer (internal/fsutil):
write to a temporary file in the destination's directory, fsync it, rename it
onto the destination, fsync the directory.

A reader sees the old file (or none) or the whole new one; a crash leaves one
of them plus at most a stale temporary file. The temporary file is named as
Go names its own (os.CreateTemp with the pattern "." + base + ".tmp-*"): a
dot file, so that a listing of regular names never shows it, holding
".tmp-", so that Go's fsutil.IsTemp recognises it and parley's cleanTemps
(train/run.go, through fsutil.RemoveTemps) removes what an interrupted
Python write left in the run directory.

Folders (a checkpoint, a model) follow the same rule: built in a temporary
sibling folder of that name, their files fsynced, renamed into place, the
parent fsynced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeAlias

TEMP_MARK = ".tmp-"
# Go's callers write their files 0o644; the temporary file is made 0o600.
FILE_PERM = 0o644
DIR_PERM = 0o755

StrPath: TypeAlias = "str | os.PathLike[str]"


def temp_prefix(base: str) -> str:
    """The name of a temporary file or folder for the destination base name,
    before its random part: Go's tempPattern without the "*"."""
    return "." + base + TEMP_MARK


def is_temp(name: str) -> bool:
    """Whether a base name is a temporary file of an interrupted atomic
    write (Go's fsutil.IsTemp)."""
    return name.startswith(".") and TEMP_MARK in name


def fsync_dir(d: StrPath) -> None:
    """fsync a directory so that a rename or create in it is durable (a file
    system that cannot sync directories is not an error), as Go's SyncDir."""
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


def make_temp_file(dest: StrPath) -> Path:
    """Create an empty temporary file named for dest, in dest's directory
    (which must exist), and return its path; the caller removes it."""
    d = Path(dest)
    fd, name = tempfile.mkstemp(prefix=temp_prefix(d.name), dir=d.parent)
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def open_atomic(dest: StrPath, perm: int = FILE_PERM) -> Iterator[BinaryIO]:
    """Yield a binary file whose bytes replace dest when the block ends
    without an exception (chmod perm, fsync, rename, fsync the directory).
    On an exception, or when the rename fails, the temporary file is removed
    and dest is untouched. dest's directory must exist."""
    path = Path(dest)
    tmp = make_temp_file(path)
    committed = False
    try:
        with open(tmp, "wb") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), perm)
            os.fsync(f.fileno())
        os.replace(tmp, path)
        committed = True
    finally:
        if not committed:
            tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def write_atomic(dest: StrPath, data: bytes, perm: int = FILE_PERM) -> None:
    """Write data to dest atomically (Go's fsutil.WriteFileAtomic)."""
    with open_atomic(dest, perm) as f:
        f.write(data)


def make_temp_dir(dest: StrPath, perm: int = DIR_PERM) -> Path:
    """Create an empty temporary folder named for dest, beside it (its
    parent is created when missing), and return its path."""
    d = Path(dest)
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(d.name), dir=d.parent))
    tmp.chmod(perm)
    return tmp


def remove_temp_dirs(dest: StrPath) -> list[str]:
    """Remove the temporary folders that interrupted builds of dest left
    beside it; return their names."""
    d = Path(dest)
    if not d.parent.is_dir():
        return []
    removed: list[str] = []
    prefix = temp_prefix(d.name)
    for entry in sorted(d.parent.iterdir()):
        if entry.name.startswith(prefix) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
            removed.append(entry.name)
    return removed


def _fsync_tree(root: Path) -> None:
    """fsync every regular file under root, then every folder, deepest first."""
    dirs: list[Path] = []
    for top, _, files in os.walk(root):
        dirs.append(Path(top))
        for name in files:
            p = Path(top) / name
            if p.is_file() and not p.is_symlink():
                with open(p, "rb") as fh:
                    os.fsync(fh.fileno())
    for d in reversed(dirs):
        fsync_dir(d)


def commit_dir(tmp: StrPath, dest: StrPath) -> None:
    """Move a filled temporary folder onto dest: fsync its files, remove an
    existing dest, rename, fsync dest's parent."""
    t, d = Path(tmp), Path(dest)
    _fsync_tree(t)
    if d.exists():
        shutil.rmtree(d)
    os.replace(t, d)
    fsync_dir(d.parent)


def write_dir(dest: StrPath, fill: Callable[[Path], None], file_perm: int | None = FILE_PERM) -> Path:
    """Build a folder with fill in a temporary sibling and move it onto dest
    (replacing it), so that a reader never sees a half-written folder; the
    top-level files are made file_perm (None: left as written). On an
    exception the temporary folder is removed and dest is untouched."""
    d = Path(dest)
    tmp = make_temp_dir(d)
    try:
        fill(tmp)
        if file_perm is not None:
            for f in tmp.iterdir():
                if f.is_file() and not f.is_symlink():
                    f.chmod(file_perm)
        commit_dir(tmp, d)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return d
