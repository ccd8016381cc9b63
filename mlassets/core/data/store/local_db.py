"""Helpers of ``LocalStore``: the sqlite metadata database (the content-addressed objects and trees are in
``local_objects``, re-exported here)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

from mlassets.core.data.store.base import Commit, NotFound
from mlassets.core.data.store.local_objects import Tree as Tree
from mlassets.core.data.store.local_objects import canonical as canonical
from mlassets.core.data.store.local_objects import diff_trees as diff_trees
from mlassets.core.data.store.local_objects import get_object as get_object
from mlassets.core.data.store.local_objects import get_tree as get_tree
from mlassets.core.data.store.local_objects import holds as holds
from mlassets.core.data.store.local_objects import merge_trees as merge_trees
from mlassets.core.data.store.local_objects import object_path as object_path
from mlassets.core.data.store.local_objects import put_object as put_object
from mlassets.core.data.store.local_objects import put_object_file as put_object_file
from mlassets.core.data.store.local_objects import put_tree as put_tree

SCHEMA = """
CREATE TABLE IF NOT EXISTS repos (
    name TEXT PRIMARY KEY, default_branch TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    id TEXT PRIMARY KEY, repo TEXT NOT NULL, parents TEXT NOT NULL, message TEXT NOT NULL,
    metadata TEXT NOT NULL, timestamp REAL NOT NULL, tree TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS commits_repo ON commits (repo);
CREATE TABLE IF NOT EXISTS branches (
    repo TEXT NOT NULL, name TEXT NOT NULL, head TEXT NOT NULL, PRIMARY KEY (repo, name));
CREATE TABLE IF NOT EXISTS tags (
    repo TEXT NOT NULL, name TEXT NOT NULL, commit_id TEXT NOT NULL, PRIMARY KEY (repo, name));
"""


# ---------------------------------------------------------------- database


def connect(db: Path, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode: transactions are opened explicitly with ``transaction``."""
    # timeout: sqlite's busy timeout, 30 s
    return sqlite3.connect(db, timeout=30, isolation_level=None, check_same_thread=check_same_thread)


def init_db(db: Path) -> None:
    conn = connect(db)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        with transaction(conn):
            # (executescript would COMMIT the open transaction: run the statements one by one)
            for stmt in filter(str.strip, SCHEMA.split(";")):
                conn.execute(stmt)
    finally:
        conn.close()


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (takes the write lock up front); COMMIT on success, ROLLBACK on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def require_repo(conn: sqlite3.Connection, repo: str) -> str:
    """The repository's default branch; NotFound if it does not exist."""
    row = conn.execute("SELECT default_branch FROM repos WHERE name = ?", (repo,)).fetchone()
    if row is None:
        raise NotFound(f"repository {repo!r} does not exist")
    return row[0]


def delete_repo(conn: sqlite3.Connection, repo: str) -> None:
    """Delete a repository's rows (NotFound if none); its objects stay, they may be shared."""
    require_repo(conn, repo)
    for table in ("tags", "branches", "commits"):
        conn.execute(f"DELETE FROM {table} WHERE repo = ?", (repo,))
    conn.execute("DELETE FROM repos WHERE name = ?", (repo,))


def branch_head(conn: sqlite3.Connection, repo: str, branch: str) -> str:
    row = conn.execute("SELECT head FROM branches WHERE repo = ? AND name = ?", (repo, branch)).fetchone()
    if row is None:
        require_repo(conn, repo)
        raise NotFound(f"branch {branch!r} does not exist in repository {repo!r}")
    return row[0]


def resolve(conn: sqlite3.Connection, repo: str, ref: str) -> str:
    """Branch, then tag, then full commit id of this repository."""
    for sql in (
        "SELECT head FROM branches WHERE repo = ? AND name = ?",
        "SELECT commit_id FROM tags WHERE repo = ? AND name = ?",
        "SELECT id FROM commits WHERE repo = ? AND id = ?",
    ):
        row = conn.execute(sql, (repo, ref)).fetchone()
        if row is not None:
            return row[0]
    require_repo(conn, repo)
    raise NotFound(f"ref {ref!r} does not exist in repository {repo!r}")


def commit_row(conn: sqlite3.Connection, repo: str, commit_id: str) -> tuple[Commit, str]:
    """The commit and its tree hash."""
    row = conn.execute(
        "SELECT parents, message, metadata, timestamp, tree FROM commits WHERE repo = ? AND id = ?",
        (repo, commit_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"commit {commit_id!r} does not exist in repository {repo!r}")
    parents, message, metadata, timestamp, tree = row
    commit = Commit(commit_id, tuple(json.loads(parents)), message, json.loads(metadata), timestamp)
    return commit, tree


def insert_commit(
    conn: sqlite3.Connection, repo: str, branch: str | None, parents: tuple[str, ...], tree: str,
    message: str, metadata: Mapping[str, str], timestamp: float,
) -> Commit:
    """Insert a commit (id = sha256 of its canonical JSON) and point ``branch`` at it (if given)."""
    meta = dict(metadata)
    commit_id = hashlib.sha256(canonical({
        "repo": repo, "parents": list(parents), "tree": tree, "message": message,
        "metadata": meta, "timestamp": timestamp,
    })).hexdigest()
    conn.execute(
        "INSERT OR IGNORE INTO commits (id, repo, parents, message, metadata, timestamp, tree)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (commit_id, repo, json.dumps(list(parents)), message, canonical(meta).decode(), timestamp, tree),
    )
    if branch is not None:
        conn.execute(
            "INSERT INTO branches (repo, name, head) VALUES (?, ?, ?)"
            " ON CONFLICT (repo, name) DO UPDATE SET head = excluded.head",
            (repo, branch, commit_id),
        )
    return Commit(commit_id, parents, message, meta, timestamp)


def merge_base(conn: sqlite3.Connection, repo: str, left: str, right: str) -> str | None:
    """The nearest common ancestor (BFS over all parents from ``left``) of two commits."""
    parents = {cid: json.loads(p) for cid, p in
               conn.execute("SELECT id, parents FROM commits WHERE repo = ?", (repo,))}

    def bfs(start: str) -> Iterator[str]:
        seen, queue = {start}, deque([start])
        while queue:
            cid = queue.popleft()
            yield cid
            for p in parents.get(cid, ()):
                if p not in seen:
                    seen.add(p)
                    queue.append(p)

    right_ancestors = set(bfs(right))
    return next((cid for cid in bfs(left) if cid in right_ancestors), None)

