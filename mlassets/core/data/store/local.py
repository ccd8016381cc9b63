"""``LocalStore``: the default ``VersionedStore``, on a local directory.

Objects are content-addressed files (``root/objects/ab/cdef...``, sha256, each stored once); repositories,
commits, branches and tags live in sqlite (``root/store.db``, WAL). A commit's tree (path -> sha256, size)
is itself a content-addressed JSON object. Every branch move is one ``BEGIN IMMEDIATE`` transaction, so
commits and merges are atomic and safe across processes.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from mlassets.core.data.store import local_db as db
from mlassets.core.data.store import local_prune
from mlassets.core.data.store.base import (
    Change,
    Commit,
    Conflict,
    NotFound,
    check_changes,
    check_head,
    check_metadata,
    validate_names,
    validate_path,
    validate_ref,
    validate_repo,
)
from mlassets.core.data.store.local_tx import LocalTransaction
from mlassets.core.data.store.transaction import run


class LocalStore:
    """A ``VersionedStore`` in a local directory (objects on disk, metadata in sqlite)."""

    backend = "local"

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.objects = self.root / "objects"
        self.objects.mkdir(parents=True, exist_ok=True)
        self._trees: dict[tuple[str, str], db.Tree] = {}  # (repo, commit id) -> its tree, read once
        self.db_path = self.root / "store.db"
        db.init_db(self.db_path)

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per call: safe across threads, fork and spawn.
        conn = db.connect(self.db_path)
        try:
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._conn() as conn, db.transaction(conn):
            yield conn

    def _tree_at(self, conn: sqlite3.Connection, repo: str, ref: str) -> tuple[str, db.Tree]:
        commit_id = db.resolve(conn, validate_repo(repo), validate_ref(ref))
        return commit_id, db.get_tree(self.objects, db.commit_row(conn, repo, commit_id)[1])

    def _tree(self, repo: str, ref: str) -> db.Tree:
        """The tree at ``ref``; a commit id's is kept (a commit never changes), a branch's is read each time."""
        kept = self._trees.get((repo, ref))
        if kept is not None:
            return kept
        with self._conn() as conn:
            commit_id, tree = self._tree_at(conn, repo, ref)
        if ref == commit_id:
            if len(self._trees) >= 64:
                self._trees.clear()
            self._trees[repo, ref] = tree
        return tree

    def _entry(self, repo: str, ref: str, path: str) -> tuple[str, int]:
        validate_path(path)
        tree = self._tree(repo, ref)
        if path not in tree:
            raise NotFound(f"object {path!r} does not exist at {ref!r} in repository {repo!r}")
        return tree[path]

    # ------------------------------------------------------------ repositories and refs

    def create_repo(self, repo: str, default_branch: str = "main") -> None:
        """Create an empty repository whose default branch has one empty root commit (idempotent)."""
        validate_names(repo, default_branch)
        empty_tree = db.put_tree(self.objects, {})
        with self._tx() as conn:
            if conn.execute("SELECT 1 FROM repos WHERE name = ?", (repo,)).fetchone():
                return
            now = time.time()
            conn.execute("INSERT INTO repos (name, default_branch, created) VALUES (?, ?, ?)",
                         (repo, default_branch, now))
            db.insert_commit(conn, repo, default_branch, (), empty_tree, "Repository created", {}, now)

    def list_repos(self) -> list[str]:
        """Sorted repository names."""
        with self._conn() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM repos ORDER BY name")]

    def delete_repo(self, repo: str) -> None:
        """Delete a repository's refs and commits (its objects stay: they may be shared)."""
        with self._tx() as conn:
            db.delete_repo(conn, validate_repo(repo))
        self._trees = {k: v for k, v in self._trees.items() if k[0] != repo}

    def create_branch(self, repo: str, branch: str, source: str) -> str:
        """Create ``branch`` at ``source`` (any ref); return its head commit id. Conflict if it exists."""
        validate_names(repo, branch, source)
        with self._tx() as conn:
            head = db.resolve(conn, repo, source)
            try:
                conn.execute("INSERT INTO branches (repo, name, head) VALUES (?, ?, ?)", (repo, branch, head))
            except sqlite3.IntegrityError:
                raise Conflict(f"branch {branch!r} already exists in repository {repo!r}") from None
        return head

    def delete_branch(self, repo: str, branch: str) -> None:
        """Delete ``branch`` (its commits stay). Conflict for the default branch."""
        validate_names(repo, branch)
        with self._tx() as conn:
            if branch == db.require_repo(conn, repo):
                raise Conflict(f"branch {branch!r} is the default branch of {repo!r}; it cannot be deleted")
            db.branch_head(conn, repo, branch)
            conn.execute("DELETE FROM branches WHERE repo = ? AND name = ?", (repo, branch))

    def list_branches(self, repo: str) -> dict[str, str]:
        """Branch name -> head commit id."""
        with self._conn() as conn:
            db.require_repo(conn, validate_repo(repo))
            return dict(conn.execute("SELECT name, head FROM branches WHERE repo = ? ORDER BY name", (repo,)))

    def prune_transactions(self, repo: str, older_than_s: float = 3600.0) -> list[str]:
        """Delete the commits of ``repo`` no branch or tag reaches (staged commits of transactions, a killed
        writer's among them) older than ``older_than_s``; their objects go with ``prune_objects``."""
        with self._tx() as conn:
            return local_prune.prune_commits(conn, repo, older_than_s)

    def prune_objects(self, older_than_s: float = 3600.0) -> tuple[int, int]:
        """Delete object files no commit of any repository refers to, older than ``older_than_s``; (files, bytes)."""
        with self._tx() as conn:
            return local_prune.prune_objects(conn, self.objects, older_than_s)

    def resolve(self, repo: str, ref: str) -> str:
        """The full commit id that a branch, tag or commit id names. NotFound otherwise."""
        with self._conn() as conn:
            return db.resolve(conn, validate_repo(repo), validate_ref(ref))

    def create_tag(self, repo: str, tag: str, ref: str) -> str:
        """Tag the commit ``ref`` names; return its id. Conflict if the tag exists."""
        validate_names(repo, tag, ref)
        with self._tx() as conn:
            commit_id = db.resolve(conn, repo, ref)
            try:
                conn.execute("INSERT INTO tags (repo, name, commit_id) VALUES (?, ?, ?)",
                             (repo, tag, commit_id))
            except sqlite3.IntegrityError:
                raise Conflict(f"tag {tag!r} already exists in repository {repo!r}") from None
        return commit_id

    def list_tags(self, repo: str) -> dict[str, str]:
        """Tag name -> commit id."""
        with self._conn() as conn:
            db.require_repo(conn, validate_repo(repo))
            rows = conn.execute("SELECT name, commit_id FROM tags WHERE repo = ? ORDER BY name", (repo,))
            return dict(rows)

    # ------------------------------------------------------------ writes

    def commit(
        self,
        repo: str,
        branch: str,
        changes: Mapping[str, bytes | None],
        message: str,
        metadata: Mapping[str, str] | None = None,
        expected_head: str | None = None,
    ) -> Commit:
        """Atomically apply ``changes`` (path -> bytes, or None to delete) as one new commit on ``branch``."""
        validate_names(repo, branch)
        if not isinstance(message, str):
            raise ValueError(f"commit message must be str, got {type(message).__name__}")
        meta = check_metadata(metadata)
        check_changes(changes)
        # Objects first (content-addressed, harmless if orphaned), then one transaction moves the branch.
        staged = {p: None if d is None else db.put_object(self.objects, d) for p, d in changes.items()}
        with self._tx() as conn:
            head = db.branch_head(conn, repo, branch)
            check_head(branch, expected_head, head)
            tree = db.get_tree(self.objects, db.commit_row(conn, repo, head)[1])
            for path, entry in staged.items():
                if entry is not None:
                    tree[path] = entry
                elif tree.pop(path, None) is None:
                    raise NotFound(f"cannot delete {path!r}: not on branch {branch!r} of {repo!r}")
            tree_id = db.put_tree(self.objects, tree)
            return db.insert_commit(conn, repo, branch, (head,), tree_id, message, meta, time.time())

    @contextlib.contextmanager
    def transaction(
        self, repo: str, branch: str, message: str, metadata: Mapping[str, str] | None = None, *,
        expected_head: str | None = None, allow_empty: bool = False,
    ) -> Iterator[LocalTransaction]:
        """Stage writes on top of ``branch``'s head; land them as one commit on exit (see ``local_tx``)."""
        with run(LocalTransaction(self, repo, branch, message, metadata, expected_head, allow_empty)) as tx:
            yield tx

    def merge(
        self, repo: str, source: str, destination: str, message: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> Commit:
        """Three-way merge of ``source`` into branch ``destination``; Conflict if both changed one path."""
        validate_names(repo, source, destination)
        meta = check_metadata(metadata)
        with self._tx() as conn:
            theirs = db.resolve(conn, repo, source)
            ours = db.branch_head(conn, repo, destination)
            base = db.merge_base(conn, repo, theirs, ours)
            if base == theirs:  # nothing new on source: a no-op
                return db.commit_row(conn, repo, ours)[0]
            trees = [db.get_tree(self.objects, db.commit_row(conn, repo, c)[1]) if c else {}
                     for c in (base, theirs, ours)]
            merged, conflicts = db.merge_trees(*trees)
            if conflicts:
                raise Conflict(f"merge {source!r} into {destination!r} of {repo!r} conflicts on: "
                               + ", ".join(repr(p) for p in conflicts))
            tree_id = db.put_tree(self.objects, merged)
            return db.insert_commit(conn, repo, destination, (ours, theirs), tree_id,
                                    message or f"Merge '{source}' into '{destination}'", meta, time.time())

    # ------------------------------------------------------------ reads

    def get_commit(self, repo: str, ref: str) -> Commit:
        """The commit ``ref`` names."""
        with self._conn() as conn:
            return db.commit_row(conn, repo, db.resolve(conn, validate_repo(repo), validate_ref(ref)))[0]

    def log(self, repo: str, ref: str, limit: int | None = None) -> list[Commit]:
        """Commits reachable from ``ref``, newest first (first-parent order)."""
        out: list[Commit] = []
        with self._conn() as conn:
            commit_id: str | None = db.resolve(conn, validate_repo(repo), validate_ref(ref))
            while commit_id is not None and (limit is None or len(out) < limit):
                commit = db.commit_row(conn, repo, commit_id)[0]
                out.append(commit)
                commit_id = commit.parents[0] if commit.parents else None
        return out

    def list_objects(self, repo: str, ref: str, prefix: str = "") -> list[str]:
        """Sorted object paths at ``ref`` under ``prefix``."""
        return sorted(p for p in self._tree(repo, ref) if p.startswith(prefix))

    def read(self, repo: str, ref: str, path: str) -> bytes:
        """The bytes of ``path`` at ``ref``."""
        return db.get_object(self.objects, self._entry(repo, ref, path)[0])

    def object_file(self, repo: str, ref: str, path: str) -> Path:
        """The local file holding ``path`` at ``ref``, to scan in place (read only: it is the stored object)."""
        return db.object_path(self.objects, self._entry(repo, ref, path)[0])

    def stat(self, repo: str, ref: str, path: str) -> dict[str, str | int]:
        """``{"path", "size", "checksum"}`` (sha256 hex) of an object at ``ref``."""
        sha, size = self._entry(repo, ref, path)
        return {"path": path, "size": size, "checksum": sha}

    def diff(self, repo: str, left: str, right: str) -> list[Change]:
        """What changed from ``left`` to ``right``, sorted by path."""
        with self._conn() as conn:
            _, a = self._tree_at(conn, repo, left)
            _, b = self._tree_at(conn, repo, right)
        return db.diff_trees(a, b)

    def uri(self, repo: str, ref: str, path: str = "") -> str:
        """``local://<repo>/<commit id>/<path>``."""
        commit_id = self.resolve(repo, ref)
        return f"local://{repo}/{commit_id}/{validate_path(path)}" if path else f"local://{repo}/{commit_id}"

