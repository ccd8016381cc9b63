"""Dataset sources: how a dataset's raw tables per partition are produced and joined into one frame.

A source is a module with ``load_month(key, sample_fraction) -> dict[str, DataFrame]`` (one partition's
raw tables, one object each in the store), ``build_frame(tables) -> DataFrame`` (rows ready for feature
preparation, with derived columns; it must give the same rows for one partition at a time as for many)
and ``MAIN_TABLE`` (the table whose rows are the examples, validated by the dataset's schema).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SOURCES = {
    "nycflights13": "mlassets.core.data.sources.nycflights13",
    "orders": "mlassets.core.data.sources.orders",  # synthetic, deterministic weekly orders
}


def get_source(name: str) -> ModuleType:
    if name not in _SOURCES:
        raise ValueError(f"dataset.source: {name!r} is not a known source (known: {', '.join(_SOURCES)})")
    return importlib.import_module(_SOURCES[name])
