"""LocalStore only: content-addressed objects are stored once, atomically, under root/objects/ab/cdef..."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from mlassets.core.data.store import open_store
from mlassets.core.data.store.local import LocalStore


def _object_files(root: Path) -> list[Path]:
    return [p for p in (root / "objects").rglob("*") if p.is_file()]


def _files_holding(root: Path, data: bytes) -> list[Path]:
    return [p for p in _object_files(root) if p.read_bytes() == data]


def test_same_bytes_under_two_paths_and_twice_stored_once(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.create_repo("dedup")
    data = b"the same payload " * 1000
    store.commit("dedup", "main", {"a.bin": data, "copy/b.bin": data}, "two paths")
    assert len(_files_holding(tmp_path, data)) == 1
    count = len(_object_files(tmp_path))
    store.commit("dedup", "main", {"a.bin": data, "c.bin": data}, "again")
    store.create_repo("other")
    store.commit("other", "main", {"x": data}, "other repo")
    assert len(_files_holding(tmp_path, data)) == 1
    assert len(_object_files(tmp_path)) == count + 2  # only the two new trees
    assert store.read("dedup", "main", "c.bin") == data


def test_object_layout_and_no_temp_files(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.create_repo("layout")
    data = b"layout"
    store.commit("layout", "main", {"f": data}, "m")
    sha = hashlib.sha256(data).hexdigest()
    assert (tmp_path / "objects" / sha[:2] / sha[2:]).read_bytes() == data
    assert not [p for p in _object_files(tmp_path) if p.name.startswith(".tmp-")]
    assert store.stat("layout", "main", "f")["checksum"] == sha


def test_sqlite_in_wal_mode(tmp_path: Path) -> None:
    LocalStore(tmp_path)
    conn = sqlite3.connect(tmp_path / "store.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_reopen_sees_same_data_and_uri_format(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path))
    store.create_repo("reopen")
    c = store.commit("reopen", "main", {"months/2013-01.parquet": b"p"}, "m")
    again = open_store("local", root=str(tmp_path))
    assert isinstance(again, LocalStore)
    assert again.read("reopen", "main", "months/2013-01.parquet") == b"p"
    assert again.uri("reopen", "main", "months/2013-01.parquet") == f"local://reopen/{c.id}/months/2013-01.parquet"


def test_transaction_reput_of_unchanged_bytes_reuses_the_object(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.create_repo("reput")
    data = b"partition " * 1000
    with store.transaction("reput", "main", "first") as tx:
        tx.put("p.parquet", data)
        tx.put("empty", b"")
    first = tx.commit
    files = {p: p.stat().st_mtime_ns for p in _object_files(tmp_path)}
    with store.transaction("reput", "main", "unchanged") as tx:
        tx.put("p.parquet", data)
        tx.put("empty", b"")
    assert tx.commit == first  # nothing new to land: no commit
    assert {p: p.stat().st_mtime_ns for p in _object_files(tmp_path)} == files  # nothing rewritten
    same_size = data[:-1] + b"!"  # same length, different last byte: must be stored, not reused
    with store.transaction("reput", "main", "changed") as tx:
        tx.put("p.parquet", same_size)
    assert tx.commit is not None and tx.commit.parents == (first.id,)
    assert store.read("reput", "main", "p.parquet") == same_size
    assert store.read("reput", first.id, "p.parquet") == data
    assert len(_files_holding(tmp_path, same_size)) == 1
