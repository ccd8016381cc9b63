"""Dataset sources: where one partition's raw tables come from, and how a partition's tables become rows.

The contract, the same for every source (``dataset.source`` in the config):

* ``main_table``: the table whose rows are the examples (validated by ``dataset.columns``); every other table
  the source delivers is declared in ``dataset.tables``.
* ``load(key) -> {table: DataFrame}``: one partition's raw tables (each is one object in the store).
* ``build_frame(tables) -> DataFrame``: rows ready for feature preparation; it must give the same rows for one
  partition at a time as for many (features are cached per partition).

Built in: ``nycflights13`` and ``orders`` (modules of this package, with their own joins), and ``files`` (CSV or
Parquet files per partition, see ``files``). A plug-in ``package.module:function`` is called with the partition
key and returns a DataFrame (the main table, named after the dataset) or ``{table: DataFrame}``; its rows are
used as they are, so a data version already in the store never needs the plug-in again (a rebuild reads the
commit).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mlassets.core.config import DatasetConfig
from mlassets.core.data.sources.base import ModuleSource, Source, sample

if TYPE_CHECKING:
    import pandas as pd

_MODULES = {
    "nycflights13": "mlassets.core.data.sources.nycflights13",
    "orders": "mlassets.core.data.sources.orders",  # synthetic, deterministic weekly orders
}


class PluginSource:
    """``package.module:function``: the function gets the partition key; rows are used as they are."""

    def __init__(self, ds: DatasetConfig) -> None:
        self.spec, self.main_table, self.sample_fraction = ds.source, ds.name, ds.sample_fraction

    def function(self) -> Callable[[str], object]:
        module, _, name = self.spec.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"dataset.source: {self.spec!r} cannot be imported ({exc})") from None

    def load(self, key: str) -> dict[str, pd.DataFrame]:
        import pandas as pd

        out = self.function()(key)
        tables = {self.main_table: out} if isinstance(out, pd.DataFrame) else out
        if not isinstance(tables, dict) or not all(isinstance(v, pd.DataFrame) for v in tables.values()):
            raise ValueError(f"dataset.source: {self.spec} returned {type(out).__name__} for partition {key!r}; "
                             "expected a DataFrame or a dict of table name -> DataFrame")
        if self.main_table not in tables:
            raise ValueError(f"dataset.source: {self.spec} returned tables {sorted(tables)} for partition {key!r}, "
                             f"without the main table {self.main_table!r} (the dataset's name)")
        return {name: sample(frame, self.sample_fraction, key) if name == self.main_table else frame
                for name, frame in tables.items()}

    def build_frame(self, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
        return tables[self.main_table]


def get_source(ds: DatasetConfig) -> Source:
    """The source a dataset config names."""
    if ds.source in _MODULES:
        return ModuleSource(importlib.import_module(_MODULES[ds.source]), ds.sample_fraction)
    if ds.source == "files":
        from mlassets.core.data.sources.files import FilesSource

        return FilesSource(ds)
    if ":" in ds.source:
        return PluginSource(ds)
    raise ValueError(f"dataset.source: {ds.source!r} is not a known source (known: {', '.join(_MODULES)}, files, "
                     "or a plug-in package.module:function)")
