"""Where a training run reports progress: the ``Reporter`` protocol and a stderr implementation."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Protocol, TextIO, runtime_checkable


@runtime_checkable
class Reporter(Protocol):
    """Progress sink for a run: free-text log lines and the orchestrator's extras (the result goes to a file)."""

    def log(self, msg: str) -> None: ...

    @property
    def extras(self) -> Mapping[str, Any]: ...


class PrintReporter:
    """Writes log lines to stderr (or any text stream); extras are given or empty."""

    def __init__(self, stream: TextIO | None = None, extras: Mapping[str, Any] | None = None) -> None:
        self._stream = stream
        self._extras = dict(extras or {})

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        print(text, file=stream, flush=True)

    def log(self, msg: str) -> None:
        self._write(f"[mlassets] {msg}")

    @property
    def extras(self) -> Mapping[str, Any]:
        return self._extras
