"""``LakeFSStore.transaction``: a hidden short-lived lakeFS branch, committed, then squash-merged.

Like the SDK's ``Branch.transact()`` (ephemeral branch -> commit -> merge -> delete), with three changes:
the branch starts at an exact commit (``base``), the merge is a squash merge carrying the transaction's
message and metadata (so the branch gets ONE commit whose only parent is its previous head, as on the local
backend), and ``expected_head`` is enforced. lakeFS has no compare-and-set on a branch head, so a
transaction with ``expected_head`` also rewrites a marker object ``@mlassets/cas/<branch>``: two such
transactions from the same head both change it, and lakeFS's own merge refuses the second one with a
conflict. (A plain write racing a compare-and-set one is only caught by the check just before merging.)
The marker path can never collide with a user path (``@`` is not allowed there) and is hidden by the store.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

import lakefs
import lakefs_sdk

from mlassets.core.data.store.base import Commit, Conflict, NotFound, check_head
from mlassets.core.data.store.lakefs_api import API_ERRORS, server_message, status_of, to_commit, translate
from mlassets.core.data.store.transaction import TransactionBase

if TYPE_CHECKING:
    from mlassets.core.data.store.base import Change


class TransactionStore(Protocol):
    """What a transaction uses of its ``LakeFSStore`` (named here: the store module imports this one)."""

    @property
    def client(self) -> lakefs.Client: ...
    @property
    def api(self) -> lakefs_sdk.client.LakeFSClient: ...
    def _missing(self, repo: str, what: str) -> NotFound: ...
    def _branch_head(self, repo: str, branch: str) -> str: ...
    def _conflicts(self, repo: str, base: str, theirs: str, ours: str) -> list[str]: ...
    def get_commit(self, repo: str, ref: str) -> Commit: ...
    def diff(self, repo: str, left: str, right: str) -> list[Change]: ...


log = logging.getLogger(__name__)

TX_PREFIX = "mlassets-tx-"
RESERVED_PREFIX = "@mlassets/"


def cas_marker(branch: str) -> str:
    return f"{RESERVED_PREFIX}cas/{branch}"


def started_at(name: str) -> float | None:
    """When the transaction whose branch is ``name`` began (unix seconds); None if the name says nothing."""
    stamp = name[len(TX_PREFIX):].split("-", 1)[0] if name.startswith(TX_PREFIX) else ""
    return float(stamp) if stamp.isdigit() else None


class LakeFSTransaction(TransactionBase):
    """A ``Transaction`` of ``LakeFSStore``: ``temp`` is the hidden lakeFS branch it writes to."""

    def __init__(
        self, store: TransactionStore, repo: str, branch: str, message: str, metadata: Mapping[str, str] | None,
        expected_head: str | None, allow_empty: bool,
    ) -> None:
        super().__init__(repo, branch, message, metadata, expected_head, allow_empty)
        self._store = store
        self.temp = f"{TX_PREFIX}{int(time.time())}-{uuid.uuid4().hex}"  # the start: see ``started_at``
        self._created = False
        self._staged: str | None = None  # the last commit on ``temp``, unless written to since

    def _begin(self) -> None:
        self.base = self._store._branch_head(self.repo, self.branch)
        check_head(self.branch, self.expected_head, self.base)
        creation = lakefs_sdk.BranchCreation(name=self.temp, source=self.base, hidden=True)
        with translate(lambda: self._store._missing(self.repo, f"commit {self.base} vanished from {self.repo!r}")):
            self._store.api.branches_api.create_branch(self.repo, creation)
        self._created = True

    def _put(self, path: str, data: bytes) -> None:
        self._staged = None
        obj = lakefs.WriteableObject(self.repo, self.temp, path, client=self._store.client)
        with translate():
            obj.upload(data, mode="wb", pre_sign=False, content_type="application/octet-stream",
                       metadata={"sha256": hashlib.sha256(data).hexdigest()})

    def _delete(self, path: str) -> None:
        api = self._store.api.objects_api
        with translate(lambda: NotFound(f"cannot delete {path!r}: not on branch {self.branch!r} of {self.repo!r}")):
            api.head_object(self.repo, self.temp, path)
        self._staged = None
        with translate():
            api.delete_object(self.repo, self.temp, path)

    def _stage(self) -> Commit:
        creation = lakefs_sdk.CommitCreation(message=self.message, metadata=self.metadata, allow_empty=True)
        with translate():
            staged = to_commit(self._store.api.commits_api.commit(self.repo, self.temp, creation))
        self._staged = staged.id
        return staged

    def _land(self) -> Commit:
        store, api = self._store, self._store.api
        if self.expected_head is not None:
            self._put(cas_marker(self.branch), uuid.uuid4().hex.encode())
        staged = self._staged or self._stage().id
        if not self.allow_empty and not store.diff(self.repo, self.base, staged):
            return self._unchanged()
        if self.expected_head is not None:
            check_head(self.branch, self.expected_head, store._branch_head(self.repo, self.branch))
        merge = lakefs_sdk.Merge(message=self.message, metadata=self.metadata, squash_merge=True,
                                 allow_empty=self.allow_empty)
        try:
            result = api.refs_api.merge_into_branch(self.repo, staged, self.branch, merge=merge)
        except API_ERRORS as exc:
            if status_of(exc) == 400 and "no changes" in server_message(exc) and not self.allow_empty:
                return self._unchanged()
            if status_of(exc) != 409:
                with translate():
                    raise
            head = store._branch_head(self.repo, self.branch)
            check_head(self.branch, self.expected_head, head)
            paths = ", ".join(map(repr, store._conflicts(self.repo, self.base, staged, self.branch)))
            raise Conflict(f"transaction on branch {self.branch!r} of {self.repo!r} conflicts with a concurrent"
                           f" commit (base {self.base}, head {head}) on: {paths or server_message(exc)}") from exc
        return store.get_commit(self.repo, result.reference)

    def _unchanged(self) -> Commit:
        """Nothing to land: the branch's current head (Conflict if it is not the expected one)."""
        head = self._store._branch_head(self.repo, self.branch)
        check_head(self.branch, self.expected_head, head)
        return self._store.get_commit(self.repo, head)

    def _cleanup(self) -> None:
        if not self._created:
            return
        try:
            self._store.api.branches_api.delete_branch(self.repo, self.temp)
        except Exception as exc:  # best effort: the branch is hidden, and a stale one changes nothing
            log.warning("could not delete transaction branch %s of %s: %s", self.temp, self.repo,
                        server_message(exc))
