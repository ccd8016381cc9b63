"""The ``VersionedStore`` protocol: git-like repositories of objects, whose commit ids are data versions.

Every backend (``local`` by default, ``lakefs``) passes one contract suite (tests/core/data/store/).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable


class StoreError(Exception):
    """Base class of store errors."""


class NotFound(StoreError):
    """A repository, ref or object does not exist."""


class Conflict(StoreError):
    """A write lost a race or would overwrite something that exists (branch, tag, merge conflict)."""


class InvalidName(StoreError, ValueError):
    """A repository, ref or object path is not acceptable."""


# lakeFS-compatible names, so one config works on both backends.
_REPO_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
_REF_RE = re.compile(r"^\w[-\w.]{0,254}$")
_PATH_RE = re.compile(r"^[A-Za-z0-9_.=\-]+(/[A-Za-z0-9_.=\-]+)*$")


def validate_repo(name: str) -> str:
    if not isinstance(name, str) or not _REPO_RE.fullmatch(name):
        raise InvalidName(f"repository name {name!r}: use 3-63 of a-z, 0-9 and '-', starting alphanumeric")
    return name


def validate_ref(name: str) -> str:
    if not isinstance(name, str) or not _REF_RE.fullmatch(name) or ".." in name:
        raise InvalidName(f"ref {name!r}: use letters, digits, '_', '-' and '.', starting with a word char")
    return name


def validate_path(path: str) -> str:
    if (not isinstance(path, str) or not _PATH_RE.fullmatch(path)
            or any(p in (".", "..") for p in path.split("/"))):
        raise InvalidName(f"object path {path!r}: relative, '/'-separated, no '.' or '..' parts")
    return path


def validate_names(repo: str, *refs: str) -> None:
    """``validate_repo(repo)`` and ``validate_ref`` of each ref."""
    validate_repo(repo)
    for ref in refs:
        validate_ref(ref)


def check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of ``metadata``; ValueError naming the key unless every key and value is a str."""
    meta = dict(metadata or {})
    for key, value in meta.items():
        if not isinstance(key, str) or not isinstance(value, str):
            bad = key if not isinstance(key, str) else value
            raise ValueError(f"metadata key {key!r}: keys and values must be str, got {type(bad).__name__}")
    return meta


def check_head(branch: str, expected: str | None, actual: str) -> None:
    """Conflict (naming both commits) unless ``expected`` is None or the branch head ``actual``."""
    if expected is not None and expected != actual:
        raise Conflict(f"branch {branch!r} moved: expected head {expected}, actual head {actual}")


def check_changes(changes: Mapping[str, bytes | None]) -> None:
    """InvalidName for a bad path, TypeError unless every value is bytes-like or None."""
    for path, data in changes.items():
        validate_path(path)
        if data is not None and not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"object {path!r}: bytes or None expected, got {type(data).__name__}")


@dataclass(frozen=True)
class Commit:
    id: str
    parents: tuple[str, ...]
    message: str
    metadata: Mapping[str, str] = field(default_factory=dict)
    timestamp: float = 0.0  # seconds since the epoch, UTC


@dataclass(frozen=True)
class Change:
    path: str
    kind: Literal["added", "removed", "changed"]


class Transaction(Protocol):
    """The writer a ``VersionedStore.transaction`` yields: its writes stay invisible until it lands.

    ``base`` is the commit it started from; ``commit`` is set when it has landed (the new head, or the
    unchanged head when there was nothing to commit and ``allow_empty`` was false). ``message`` and
    ``metadata`` may still be changed inside the with-block: the landed commit gets their final values.
    """

    repo: str
    branch: str
    base: str
    message: str
    metadata: dict[str, str]
    commit: Commit | None

    def put(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` (visible to nobody until the transaction lands)."""

    def put_file(self, path: str, file: str | Path) -> None:
        """Write a local file's bytes at ``path``: like ``put``, without holding the file in memory where the
        backend can stream it (``local``)."""

    def delete(self, path: str) -> None:
        """Delete ``path``; NotFound unless it exists at ``base`` or was put in this transaction."""

    def stage(self) -> Commit:
        """Commit the writes so far on the short-lived branch (parent ``base``), readable by id, not landed."""


@runtime_checkable
class VersionedStore(Protocol):
    """Repositories with branches, immutable commits, tags, diff, merge and reads at any commit.

    Refs accepted by read-side methods: a branch name, a tag name or a full commit id.
    """

    backend: str

    def create_repo(self, repo: str, default_branch: str = "main") -> None:
        """Create an empty repository whose default branch has one empty root commit (idempotent)."""

    def list_repos(self) -> list[str]: ...

    def delete_repo(self, repo: str) -> None:
        """Delete a repository with its refs and commits. NotFound if it does not exist."""

    def create_branch(self, repo: str, branch: str, source: str) -> str:
        """Create ``branch`` at ``source`` (any ref); return its head commit id. Conflict if it exists."""

    def delete_branch(self, repo: str, branch: str) -> None: ...

    def list_branches(self, repo: str) -> dict[str, str]:
        """Branch name -> head commit id."""

    def resolve(self, repo: str, ref: str) -> str:
        """The full commit id that a branch, tag or commit id names. NotFound otherwise."""

    def commit(
        self,
        repo: str,
        branch: str,
        changes: Mapping[str, bytes | None],
        message: str,
        metadata: Mapping[str, str] | None = None,
        expected_head: str | None = None,
    ) -> Commit:
        """Atomically apply ``changes`` (path -> bytes, or None to delete) as one new commit on ``branch``.

        All or nothing: on any error the branch head is unchanged. With ``expected_head`` the commit
        fails with Conflict unless the branch head is still that commit (compare-and-set).
        """

    def transaction(
        self,
        repo: str,
        branch: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        *,
        expected_head: str | None = None,
        allow_empty: bool = False,
    ) -> AbstractContextManager[Transaction]:
        """Write through a short-lived branch taken from ``branch``'s head; land it as one commit on exit.

        On a clean exit the changes are committed and merged into ``branch`` as ONE commit whose only
        parent is the head at that moment (three-way merge against ``base``): Conflict, with nothing
        landed, if a concurrent write changed a path this transaction also changed (or, with
        ``expected_head``, if the head moved at all). On an exception nothing reaches ``branch``. The
        short-lived branch is removed either way; a writer killed midway leaves ``branch`` untouched.
        """

    def prune_transactions(self, repo: str, older_than_s: float = 3600.0) -> list[str]:
        """Remove what killed writers left of their transactions when they began more than ``older_than_s`` ago
        (local: commits no branch or tag reaches; lakeFS: hidden branches, with their staged objects and
        commits); one line per thing removed. Younger ones may still be in flight and stay."""

    def prune_objects(self, older_than_s: float = 3600.0) -> tuple[int, int]:
        """Remove stored objects no commit refers to, older than ``older_than_s``; ``(objects, bytes)`` removed
        (lakeFS: none here; its garbage collection removes them on the server's schedule)."""

    def get_commit(self, repo: str, ref: str) -> Commit: ...

    def log(self, repo: str, ref: str, limit: int | None = None) -> list[Commit]:
        """Commits reachable from ``ref``, newest first (first-parent order)."""

    def list_objects(self, repo: str, ref: str, prefix: str = "") -> list[str]:
        """Sorted object paths at ``ref`` under ``prefix``."""

    def read(self, repo: str, ref: str, path: str) -> bytes: ...

    def stat(self, repo: str, ref: str, path: str) -> dict[str, str | int]:
        """``{"path", "size", "checksum"}`` of an object at ``ref``."""

    def diff(self, repo: str, left: str, right: str) -> list[Change]:
        """What changed from ``left`` to ``right``, sorted by path."""

    def create_tag(self, repo: str, tag: str, ref: str) -> str:
        """Tag the commit ``ref`` names; return its id. Conflict if the tag exists."""

    def list_tags(self, repo: str) -> dict[str, str]: ...

    def merge(
        self, repo: str, source: str, destination: str, message: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> Commit:
        """Merge branch ``source`` into branch ``destination``; Conflict if both changed one path."""

    def uri(self, repo: str, ref: str, path: str = "") -> str:
        """A printable address, e.g. ``local://flights/<commit>/months/2013-01.parquet``."""
