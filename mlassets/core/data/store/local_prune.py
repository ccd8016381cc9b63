"""Pruning what killed writers left in a ``LocalStore``: commits no branch or tag reaches (staged commits of
transactions), then object files no commit refers to (and temporary files of writes cut off midway).

Both take an age: only what is older is removed, so transactions in flight (younger) keep what they wrote.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from mlassets.core.data.store import local_db as db
from mlassets.core.data.store.base import validate_repo
from mlassets.core.data.store.local_objects import load_tree


def unreachable(conn: sqlite3.Connection, repo: str, before: float) -> list[tuple[str, float, str]]:
    """``(id, timestamp, message)`` of the commits of ``repo`` no branch or tag reaches (through all parents),
    made before ``before``: staged commits of transactions, and what a deleted branch held."""
    rows = {cid: (json.loads(p), ts, msg) for cid, p, ts, msg in
            conn.execute("SELECT id, parents, timestamp, message FROM commits WHERE repo = ?", (repo,))}
    todo = [r[0] for r in conn.execute("SELECT head FROM branches WHERE repo = ? UNION "
                                        "SELECT commit_id FROM tags WHERE repo = ?", (repo, repo))]
    reached: set[str] = set()
    while todo:
        cid = todo.pop()
        if cid not in reached:
            reached.add(cid)
            todo.extend(rows.get(cid, ([], 0, ""))[0])
    return sorted((cid, ts, msg) for cid, (_, ts, msg) in rows.items() if cid not in reached and ts < before)


def referenced_objects(conn: sqlite3.Connection, objects: Path) -> set[str]:
    """Every object a commit of any repository refers to: its tree, and the tree's entries."""
    out: set[str] = set()
    for (tree,) in conn.execute("SELECT DISTINCT tree FROM commits"):
        out.add(tree)
        out.update(sha for sha, _ in dict(load_tree(objects, tree)).values())
    return out


def unreferenced_files(objects: Path, referenced: set[str], before: float) -> list[Path]:
    """Object files (and temporary files of killed writes) older than ``before`` that no commit refers to."""
    found = []
    for folder in objects.iterdir() if objects.is_dir() else []:
        for path in folder.iterdir() if folder.is_dir() else []:
            stale = path.name.startswith(".tmp-") or folder.name + path.name not in referenced
            if stale and path.stat().st_mtime < before:
                found.append(path)
    return found


def prune_commits(conn: sqlite3.Connection, repo: str, older_than_s: float) -> list[str]:
    """Delete the commits of ``repo`` no branch or tag reaches, older than ``older_than_s``; one line each (``conn``
    in the store's write transaction)."""
    db.require_repo(conn, validate_repo(repo))
    gone = unreachable(conn, repo, time.time() - older_than_s)
    conn.executemany("DELETE FROM commits WHERE repo = ? AND id = ?", [(repo, cid) for cid, _, _ in gone])
    return [f"commit {cid[:12]} ({time.time() - ts:.0f} s old, no branch reaches it: {msg[:60]!r})"
            for cid, ts, msg in gone]


def prune_objects(conn: sqlite3.Connection, objects: Path, older_than_s: float) -> tuple[int, int]:
    """Delete object files under ``objects`` no commit refers to, older than ``older_than_s``; ``(files, bytes)``
    removed (``conn`` in the store's write transaction: no commit lands meanwhile)."""
    stale = unreferenced_files(objects, referenced_objects(conn, objects), time.time() - older_than_s)
    removed = 0
    for path in stale:
        removed += path.stat().st_size
        path.unlink(missing_ok=True)
    return len(stale), removed
