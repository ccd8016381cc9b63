"""The ``VersionedStore`` protocol: git-like repositories of objects, whose commit ids are data versions.

Every backend (``local`` by default, ``lakefs``) passes one contract suite (tests/core/store/).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
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


@runtime_checkable
class VersionedStore(Protocol):
    """Repositories with branches, immutable commits, tags, diff, merge and reads at any commit.

    Refs accepted by read-side methods: a branch name, a tag name or a full commit id.
    """

    backend: str

    def create_repo(self, repo: str, default_branch: str = "main") -> None:
        """Create an empty repository whose default branch has one empty root commit (idempotent)."""

    def list_repos(self) -> list[str]: ...

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
