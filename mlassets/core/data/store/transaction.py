"""What both backends' transactions share: argument checks, the writer's life cycle, the landing protocol.

A backend subclasses ``TransactionBase`` with these hooks: ``_begin`` (take the short-lived branch from the
head; set ``base``), ``_put``/``_delete`` (write there), ``_stage`` (commit there), ``_land`` (commit and
merge into the branch; return the landed commit) and ``_cleanup`` (drop the short-lived branch; runs on
success and on failure).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from mlassets.core.data.store.base import (
    Commit,
    StoreError,
    check_metadata,
    validate_path,
    validate_ref,
    validate_repo,
)

T = TypeVar("T", bound="TransactionBase")


class TransactionBase:
    """A writer whose puts and deletes reach ``branch`` only when the transaction lands, all at once."""

    def __init__(
        self, repo: str, branch: str, message: str, metadata: Mapping[str, str] | None,
        expected_head: str | None, allow_empty: bool,
    ) -> None:
        self.repo = validate_repo(repo)
        self.branch = validate_ref(branch)
        if not isinstance(message, str):
            raise ValueError(f"commit message must be str, got {type(message).__name__}")
        self.message = message
        self.metadata = check_metadata(metadata)
        if expected_head is not None:
            validate_ref(expected_head)
        self.expected_head = expected_head
        self.allow_empty = bool(allow_empty)
        self.base = ""
        self.commit: Commit | None = None
        self._open = False

    def __repr__(self) -> str:
        state = "open" if self._open else ("landed" if self.commit else "closed")
        return f"{type(self).__name__}({self.repo!r}, {self.branch!r}, base={self.base[:12]!r}, {state})"

    def put(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` in this transaction."""
        self._check_open()
        validate_path(path)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"object {path!r}: bytes expected, got {type(data).__name__}")
        self._put(path, bytes(data))

    def put_file(self, path: str, file: str | Path) -> None:
        """Write the local file ``file`` at ``path`` (a backend that can streams it; the others read it whole)."""
        self._check_open()
        validate_path(path)
        self._put_file(path, Path(file))

    def delete(self, path: str) -> None:
        """Delete ``path`` in this transaction; NotFound unless it exists there."""
        self._check_open()
        self._delete(validate_path(path))

    def stage(self) -> Commit:
        """Commit what was written so far on the short-lived branch, without landing it.

        The commit (parent: ``base``) is readable by its id, e.g. to validate it before the transaction
        lands; raising inside the with-block then still lands nothing. Writing may go on afterwards.
        """
        self._check_open()
        return self._stage()

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError(f"transaction on {self.repo!r}/{self.branch!r} is closed; write inside its with-block")

    # ------------------------------------------------------------ backend hooks

    def _begin(self) -> None:
        raise NotImplementedError

    def _put(self, path: str, data: bytes) -> None:
        raise NotImplementedError

    def _put_file(self, path: str, file: Path) -> None:
        self._put(path, file.read_bytes())

    def _delete(self, path: str) -> None:
        raise NotImplementedError

    def _stage(self) -> Commit:
        raise NotImplementedError

    def _land(self) -> Commit:
        raise NotImplementedError

    def _cleanup(self) -> None:
        """Drop the short-lived branch (best effort); called once whatever happened."""


@contextlib.contextmanager
def run(tx: T) -> Iterator[T]:
    """Begin ``tx``, yield it, land it on a clean exit; clean up always. An error lands nothing."""
    tx._begin()
    try:
        tx._open = True
        try:
            yield tx
        finally:
            tx._open = False
        tx.commit = tx._land()
    finally:
        tx._cleanup()
