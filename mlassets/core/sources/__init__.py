"""Dataset sources: how a dataset's monthly raw tables are produced and joined into one frame.

A source is a module with ``load_month(month, sample_fraction) -> dict[str, DataFrame]`` (the raw
tables, one object each in the store) and ``build_frame(tables) -> DataFrame`` (rows ready for
validation and feature preparation, with derived columns).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SOURCES = {"nycflights13": "mlassets.core.sources.nycflights13"}


def get_source(name: str) -> ModuleType:
    if name not in _SOURCES:
        raise ValueError(f"dataset.source: {name!r} is not a known source (known: {', '.join(_SOURCES)})")
    return importlib.import_module(_SOURCES[name])
