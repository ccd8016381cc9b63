"""Helpers of ``LocalStore``: content-addressed object files and the sqlite metadata database."""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import sqlite3
import tempfile
from collections import deque
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path

from mlassets.core.data.store.base import Change, Commit, NotFound

# path -> (sha256 hex, size in bytes)
Tree = dict[str, tuple[str, int]]

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


def put_object(objects: Path, data: bytes) -> tuple[str, int]:
    """Store ``data`` once under its sha256 (temp file + fsync + ``os.replace``); return (sha, size)."""
    data = bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    target = object_path(objects, sha)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return sha, len(data)


def put_object_file(objects: Path, source: Path, chunk: int = 1 << 20) -> tuple[str, int]:
    """Store the file ``source`` once under its sha256, streamed in chunks (never held whole); return (sha, size)."""
    digest, size = hashlib.sha256(), 0
    with open(source, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
            size += len(block)
    sha = digest.hexdigest()
    target = object_path(objects, sha)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out, open(source, "rb") as f:
                while block := f.read(chunk):
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
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
def _load_tree(objects: Path, sha: str) -> tuple[tuple[str, tuple[str, int]], ...]:
    raw = json.loads(get_object(objects, sha))
    return tuple((p, (v[0], int(v[1]))) for p, v in raw.items())


def get_tree(objects: Path, sha: str) -> Tree:
    """A fresh (mutable) copy of the tree stored under ``sha``."""
    return dict(_load_tree(objects, sha))


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

