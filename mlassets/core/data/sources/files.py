"""The ``files`` source: a partition's tables are CSV or Parquet files, read and coerced to the config's schema.

``dataset.path`` names the main table's file of a partition with ``{partition}`` (``data/sales_{partition}.csv``),
or a folder or glob per partition (``landing/{partition}/*.csv``, all files concatenated); ``dataset.tables.<name>
.path`` does the same for every other table. Headers are cleaned as users expect (a byte-order mark, surrounding
spaces); every declared column is coerced to its dtype, and a value that does not parse fails the delivery with
the file, column, row and value named (dates by their declared format, ISO 8601 by default, or built from year
and month columns: ``mlassets.core.data.dates``). Columns the config does not declare are not stored (said in
``notes``); a row without a target fails the delivery unless ``dataset.drop_missing_target`` says to drop it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.config import DatasetConfig
from mlassets.core.data.sources.base import sample
from mlassets.core.data.sources.files_parse import FileRejected as FileRejected

if TYPE_CHECKING:
    import pandas as pd


_PERIODS = {"YYYY": "%Y", "YYYY-MM": "%Y-%m", "YYYY-MM-DD": "%Y-%m-%d", "YYYY-Www": "%G-W%V"}


def in_partition(values: pd.Series, key: str, pattern: str) -> pd.Series:
    """Which rows belong to partition ``key``: a date's period (year, month, ISO week, day, in UTC) when the
    pattern names one, else the value itself (an integral number as an integer: 2007.0 is "2007")."""
    import pandas as pd

    if isinstance(values.dtype, pd.DatetimeTZDtype) and pattern in _PERIODS:
        return values.dt.strftime(_PERIODS[pattern]) == key
    if pd.api.types.is_numeric_dtype(values):
        return values.map(lambda v: format(v, ".15g")) == key
    return values.astype(str).str.strip() == key


class FilesSource:
    """The main table (named after the dataset) and every ``dataset.tables`` entry, from files."""

    def __init__(self, ds: DatasetConfig) -> None:
        self.ds, self.main_table = ds, ds.name
        self.notes: list[str] = []

    def templates(self, override: str | None = None) -> dict[str, str]:
        """Table -> path template; ``override`` (a file, or a folder of ``<table>.<ext>`` files) replaces them."""
        tables = {self.main_table: self.ds.path, **{n: s.path for n, s in self.ds.tables.items()}}
        if override is None:
            return tables
        path = Path(override)
        if path.is_file():
            if self.ds.tables:
                raise FileRejected([f"{override}: a single file holds one table, the dataset has "
                                    f"{len(tables)} ({', '.join(tables)}); give a folder of <table> files"])
            return {self.main_table: str(path)}
        return {name: str(path / f"{name}.*") for name in tables}

    def load(self, key: str, override: str | None = None) -> dict[str, pd.DataFrame]:
        self.notes = []
        columns = {self.main_table: self.ds.columns, **{n: s.columns for n, s in self.ds.tables.items()}}
        target = "" if self.ds.drop_missing_target else self.ds.target
        from mlassets.core.data.sources.files_read import read_table

        out = {name: read_table(template, key, self.ds.format, columns[name], self.notes, self.ds.missing_values,
                                target if name == self.main_table else "")
               for name, template in self.templates(override).items()}
        main = out[self.main_table]
        if self.ds.partition_column:
            main = main[in_partition(main[self.ds.partition_column], key, self.ds.partitions.pattern)]
            if main.empty:
                raise FileRejected([f"partition {key!r}: no row of the delivered file(s) has "
                                    f"{self.ds.partition_column} in {key}"])
        out[self.main_table] = sample(main.reset_index(drop=True), self.ds.sample_fraction, key)
        return out

    def build_frame(self, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
        return tables[self.main_table]


