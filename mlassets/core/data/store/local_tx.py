"""``LocalStore.transaction``: the short-lived branch is a staged tree on top of ``base``.

Puts go straight into the content-addressed object store (harmless if never referenced); the staged tree
lives in the writer until it lands (``stage()`` records it as a commit on no branch, readable by id).
Landing is ONE sqlite ``BEGIN IMMEDIATE`` transaction that three-way merges (base, staged, current head)
and moves the branch, so a writer killed at any point before its COMMIT leaves the branch exactly as it
was, and nothing has to be cleaned up.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mlassets.core.data.store import local_db as db
from mlassets.core.data.store.base import Commit, Conflict, NotFound, check_head
from mlassets.core.data.store.transaction import TransactionBase

if TYPE_CHECKING:
    from pathlib import Path


class StoreFiles(Protocol):
    """What a transaction reads of its ``LocalStore``: the database and the object folder."""

    db_path: Path
    objects: Path


class LocalTransaction(TransactionBase):
    """A ``Transaction`` of ``LocalStore``."""

    def __init__(
        self, store: StoreFiles, repo: str, branch: str, message: str, metadata: Mapping[str, str] | None,
        expected_head: str | None, allow_empty: bool,
    ) -> None:
        super().__init__(repo, branch, message, metadata, expected_head, allow_empty)
        self._store = store
        self._base_tree: db.Tree = {}
        self._writes: dict[str, tuple[str, int] | None] = {}
        self._db: sqlite3.Connection | None = None

    def _begin(self) -> None:
        # One connection for the transaction's life (sqlite reads the schema once); a transaction is used by one
        # thread at a time, though stage() may come from another than the with-statement's.
        self._db = conn = db.connect(self._store.db_path, check_same_thread=False)
        self.base = db.branch_head(conn, self.repo, self.branch)
        check_head(self.branch, self.expected_head, self.base)
        self._base_tree = db.get_tree(self._store.objects, db.commit_row(conn, self.repo, self.base)[1])

    def _cleanup(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _put(self, path: str, data: bytes) -> None:
        # Re-putting the bytes already at ``path`` (an unchanged partition) costs one compare, not a hash.
        entry = self._base_tree.get(path)
        if entry is not None and entry[1] == len(data) and db.holds(self._store.objects, entry[0], data):
            self._writes[path] = entry
        else:
            self._writes[path] = db.put_object(self._store.objects, data)

    def _put_file(self, path: str, file: Path) -> None:
        self._writes[path] = db.put_object_file(self._store.objects, file)

    def _delete(self, path: str) -> None:
        exists = self._writes[path] is not None if path in self._writes else path in self._base_tree
        if not exists:
            raise NotFound(f"cannot delete {path!r}: not on branch {self.branch!r} of {self.repo!r}")
        self._writes[path] = None

    def _theirs(self) -> db.Tree:
        """The short-lived branch's tree: ``base`` with this transaction's writes."""
        theirs = dict(self._base_tree)
        for path, entry in self._writes.items():
            if entry is None:
                theirs.pop(path, None)
            else:
                theirs[path] = entry
        return theirs

    def _stage(self) -> Commit:
        tree_id = db.put_tree(self._store.objects, self._theirs())
        with db.transaction(self._db) as conn:  # a commit on no branch: readable by id, like lakeFS's
            return db.insert_commit(conn, self.repo, None, (self.base,), tree_id, self.message, self.metadata,
                                    time.time())

    def _land(self) -> Commit:
        theirs, objects = self._theirs(), self._store.objects
        conn = self._db
        if theirs == self._base_tree and not self.allow_empty:  # nothing to land: no write lock needed
            head = db.branch_head(conn, self.repo, self.branch)
            check_head(self.branch, self.expected_head, head)
            return db.commit_row(conn, self.repo, head)[0]
        with db.transaction(conn):
            head = db.branch_head(conn, self.repo, self.branch)
            check_head(self.branch, self.expected_head, head)
            head_commit, head_tree = db.commit_row(conn, self.repo, head)
            ours = db.get_tree(objects, head_tree)
            merged, conflicts = db.merge_trees(self._base_tree, theirs, ours)
            if conflicts:
                raise Conflict(
                    f"transaction on branch {self.branch!r} of {self.repo!r} conflicts with a concurrent commit"
                    f" (base {self.base}, head {head}) on: " + ", ".join(repr(p) for p in conflicts))
            if merged == ours and not self.allow_empty:
                return head_commit
            tree_id = db.put_tree(objects, merged)
            return db.insert_commit(conn, self.repo, self.branch, (head,), tree_id, self.message, self.metadata,
                                    time.time())
