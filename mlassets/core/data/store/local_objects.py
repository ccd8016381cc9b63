"""Helpers of ``LocalStore``: content-addressed object files (sha256 of their bytes) and trees (path -> object)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import tempfile
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from mlassets.core.data.store.base import Change

# path -> (sha256 hex, size in bytes)
Tree = dict[str, tuple[str, int]]


def canonical(value: object) -> bytes:
    """Deterministic JSON bytes (sorted keys, no whitespace)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def diff_trees(a: Tree, b: Tree) -> list[Change]:
    """What changed from tree ``a`` to tree ``b``, sorted by path."""
    changes = [Change(p, "removed") for p in a.keys() - b.keys()]
    changes += [Change(p, "added") for p in b.keys() - a.keys()]
    changes += [Change(p, "changed") for p in a.keys() & b.keys() if a[p][0] != b[p][0]]
    return sorted(changes, key=lambda c: c.path)


def merge_trees(base: Tree, theirs: Tree, ours: Tree) -> tuple[Tree, list[str]]:
    """Three-way merge of trees: (merged tree, sorted conflicting paths)."""
    merged: Tree = {}
    conflicts: list[str] = []
    for path in sorted(base.keys() | theirs.keys() | ours.keys()):
        b, t, o = base.get(path), theirs.get(path), ours.get(path)
        if t == o or t == b:
            result = o
        elif o == b:
            result = t
        else:
            conflicts.append(path)
            continue
        if result is not None:
            merged[path] = result
    return merged, conflicts


# ---------------------------------------------------------------- objects


def object_path(objects: Path, sha: str) -> Path:
    return objects / sha[:2] / sha[2:]


def _write_once(target: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write ``target`` unless it exists: into a temporary file beside it, fsynced, then ``os.replace``d (a reader
    sees the whole object or none; a failed write leaves no temporary file)."""
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def put_object(objects: Path, data: bytes) -> tuple[str, int]:
    """Store ``data`` once under its sha256; return (sha, size)."""
    data = bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    _write_once(object_path(objects, sha), lambda out: out.write(data))
    return sha, len(data)


def put_object_file(objects: Path, source: Path, chunk: int = 1 << 20) -> tuple[str, int]:
    """Store the file ``source`` once under its sha256, streamed in chunks (never held whole); return (sha, size)."""
    digest, size = hashlib.sha256(), 0
    with open(source, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
            size += len(block)
    sha = digest.hexdigest()

    def copy(out: BinaryIO) -> None:
        with open(source, "rb") as f:
            while block := f.read(chunk):
                out.write(block)

    _write_once(object_path(objects, sha), copy)
    return sha, size


def get_object(objects: Path, sha: str) -> bytes:
    return object_path(objects, sha).read_bytes()


def holds(objects: Path, sha: str, data: bytes) -> bool:
    """Whether the object ``sha`` holds exactly ``data``: a byte compare, cheaper than hashing ``data``.

    The file is mapped, not copied; ``find`` of a needle as long as the haystack can only match at 0.
    """
    try:
        fd = os.open(os.path.join(objects, sha[:2], sha[2:]), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        if os.fstat(fd).st_size != len(data):
            return False
        if not data:
            return True
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
            return mapped.find(data) == 0
    finally:
        os.close(fd)


def put_tree(objects: Path, tree: Mapping[str, tuple[str, int]]) -> str:
    return put_object(objects, canonical({p: list(v) for p, v in tree.items()}))[0]


@lru_cache(maxsize=256)
def load_tree(objects: Path, sha: str) -> tuple[tuple[str, tuple[str, int]], ...]:
    raw = json.loads(get_object(objects, sha))
    return tuple((p, (v[0], int(v[1]))) for p, v in raw.items())


def get_tree(objects: Path, sha: str) -> Tree:
    """A fresh (mutable) copy of the tree stored under ``sha``."""
    return dict(load_tree(objects, sha))
