"""Dagster Pipes glue for subprocesses: a ``Reporter`` backed by ``dagster_pipes.open_dagster_pipes()``.

Under torchrun only rank 0 opens it (see ``mlassets.core.train``); the other ranks print to stderr.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from dagster_pipes import PipesContext, open_dagster_pipes


class PipesReporter:
    """Context manager: log lines stream back to the launching Dagster step, and it reads the extras."""

    def __init__(self, **open_kwargs: Any) -> None:
        self._open_kwargs = open_kwargs  # context_loader / message_writer / params_loader overrides
        self._context: PipesContext | None = None

    def __enter__(self) -> PipesReporter:
        self._context = open_dagster_pipes(**self._open_kwargs)
        self._context.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        context, self._context = self._context, None
        if context is not None:
            context.__exit__(exc_type, exc, tb)  # reports the exception, if any, then closes

    @property
    def context(self) -> PipesContext:
        if self._context is None:
            raise RuntimeError("PipesReporter is not open; use it as a context manager")
        return self._context

    def log(self, msg: str) -> None:
        self.context.log.info(msg)

    @property
    def extras(self) -> Mapping[str, Any]:
        return self.context.extras
