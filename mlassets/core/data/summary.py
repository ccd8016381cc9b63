"""Per-partition summaries of the target, written at ingestion beside the data, so that a new version's
cross-partition checks compare its new partitions with the earlier ones without reading them again.

A summary holds the row count and the target's count, mean, standard deviation and 1001 quantiles (every
0.1%). Summaries merge exactly in count, mean and standard deviation; merged quantiles invert the mixture of
the partitions' piecewise-linear distribution functions, within about 0.1% of rank of the exact ones.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlassets.core.records import Record

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlassets.core.config import DatasetConfig
    from mlassets.core.data.store import VersionedStore

PREFIX = "summaries/"


@functools.cache
def grid() -> np.ndarray:
    """The 1001 probabilities (every 0.1%) a summary keeps the quantiles at."""
    import numpy as np

    return np.linspace(0.0, 1.0, 1001)


def summary_path(partition: str) -> str:
    return f"{PREFIX}{partition}.json"


@dataclass(frozen=True, kw_only=True)
class TargetStats(Record):
    """Count, mean, standard deviation (ddof 1) and quantiles at ``grid()`` of a set of target values."""

    count: int
    mean: float
    std: float
    quantiles: list[float]

    @classmethod
    def of_values(cls, values: pd.Series | None) -> TargetStats:
        """From values (non-numeric and missing ones are left out: the schema check judges them)."""
        import numpy as np

        return cls.of_array(numbers(values) if values is not None else np.empty(0, dtype=np.float64))

    @classmethod
    def of_array(cls, arr: np.ndarray) -> TargetStats:
        """From float64 values without missing ones (``numbers``)."""
        import numpy as np

        if not arr.size:
            return cls(count=0, mean=math.nan, std=math.nan, quantiles=[])
        std = float(arr.std(ddof=1)) if arr.size > 1 else math.nan
        return cls(count=int(arr.size), mean=float(arr.mean()), std=std,
                   quantiles=[float(q) for q in np.quantile(arr, grid())])

    @classmethod
    def merge(cls, parts: Sequence[TargetStats]) -> TargetStats:
        """The statistics of the union of the parts' values."""
        import numpy as np

        parts = [p for p in parts if p.count]
        if not parts:
            return cls(count=0, mean=math.nan, std=math.nan, quantiles=[])
        if len(parts) == 1:
            return parts[0]
        n = np.array([p.count for p in parts], dtype=np.float64)
        means = np.array([p.mean for p in parts])
        mean = float(np.sum(n * means) / n.sum())
        m2 = sum((c - 1) * (p.std if c > 1 else 0.0) ** 2 + c * (p.mean - mean) ** 2 for p, c in zip(parts, n,
                                                                                                     strict=True))
        std = math.sqrt(m2 / (n.sum() - 1)) if n.sum() > 1 else math.nan
        return cls(count=int(n.sum()), mean=mean, std=std, quantiles=_mixture_quantiles(parts, n))

    def quantile(self, q: float) -> float:
        import numpy as np

        if not self.quantiles:
            return math.nan
        return float(np.interp(q, grid(), self.quantiles))


def numbers(values: pd.Series) -> np.ndarray:
    """The numeric, present values of a series as float64 (non-numeric and missing ones left out)."""
    import numpy as np
    import pandas as pd

    return pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=np.float64)


def _mixture_quantiles(parts: Sequence[TargetStats], weights: np.ndarray) -> list[float]:
    """Invert ``F(x) = sum_i w_i F_i(x) / sum_i w_i`` at every grid point by bisection (vectorized)."""
    import numpy as np

    grids = [np.asarray(p.quantiles) for p in parts]
    w = weights / weights.sum()

    def cdf(x: np.ndarray) -> np.ndarray:
        return sum(wi * np.interp(x, g, grid(), left=0.0, right=1.0) for wi, g in zip(w, grids, strict=True))

    lo = np.full(grid().size, min(g[0] for g in grids))
    hi = np.full(grid().size, max(g[-1] for g in grids))
    for _ in range(60):
        mid = (lo + hi) / 2
        below = cdf(mid) < grid()
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return [float(v) for v in hi]


@dataclass(frozen=True, kw_only=True)
class PartitionSummary(Record):
    """One partition of the main table: its rows and its target's statistics."""

    partition: str
    rows: int
    target: TargetStats
    days: int = 0  # distinct calendar days of the time column the rows cover (0: no time column, or not recorded)

    @classmethod
    def of_frame(cls, partition: str, frame: pd.DataFrame, target: str, time_column: str = "") -> PartitionSummary:
        days = len(calendar_days(frame[time_column])) if time_column and time_column in frame else 0
        return cls(partition=partition, rows=len(frame), target=TargetStats.of_values(frame.get(target)), days=days)


def calendar_days(values: pd.Series) -> set:
    """The distinct calendar days of datetime values (what rows per time unit are counted over)."""
    import pandas as pd

    days = pd.to_datetime(values, errors="coerce").dropna()
    days = days.dt.tz_localize(None).dt.normalize() if days.dt.tz is not None else days.dt.normalize()
    return set(days.drop_duplicates())  # a few hundred Timestamps, not one per row


DAY_UNITS = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def _arrow_numbers(column: pa.ChunkedArray) -> np.ndarray:
    """``numbers`` of an Arrow column: a numeric one in Arrow (missing and NaN left out), any other by pandas."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        return numbers(column.to_pandas())
    values = pc.drop_null(column).cast(pa.float64(), safe=False).to_numpy()  # rounded as pandas rounds
    return values[~np.isnan(values)] if pa.types.is_floating(column.type) else values


def _arrow_days(column: pa.ChunkedArray) -> set:
    """``calendar_days`` of an Arrow column: a UTC or naive timestamp's days counted from the epoch in Arrow (a
    file's column has one type, so its batches agree), any other by pandas."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if not pa.types.is_timestamp(kind) or kind.tz not in (None, "UTC", "+00:00", "Etc/UTC"):
        return calendar_days(column.to_pandas())
    ticks = pl.Series(pc.drop_null(column).cast(pa.int64()).to_numpy())
    return set((ticks // DAY_UNITS[kind.unit]).unique().to_list())  # floor division: days before 1970 too


def summarize_reader(partition: str, reader: pq.ParquetFile, target: str, budget_mb: int,
                     time_column: str = "") -> PartitionSummary:
    """A partition's summary from its main table's Parquet, reading only the target column (and the time column's
    days) in batches (the values are kept, 8 bytes a row, so that the quantiles are exact)."""
    import numpy as np

    from mlassets.core.data.batches import iter_tables

    rows = reader.metadata.num_rows
    names = reader.schema_arrow.names
    timed = time_column if time_column and time_column in names else ""
    columns = [c for c in (target, timed) if c and c in names]
    parts, days = [], set()
    for table in iter_tables(reader, budget_mb, columns) if columns else ():
        if target in table.column_names:
            parts.append(_arrow_numbers(table.column(target)))
        if timed:
            days |= _arrow_days(table.column(timed))
    if target not in names:
        return PartitionSummary(partition=partition, rows=rows, target=TargetStats.of_values(None), days=len(days))
    values = np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)
    return PartitionSummary(partition=partition, rows=rows, target=TargetStats.of_array(values), days=len(days))


def summarize_object(store: VersionedStore, repo: str, ref: str, partition: str, path: str,
                     ds: DatasetConfig) -> PartitionSummary:
    """``summarize_reader`` of a stored object, read where it lies."""
    from mlassets.core.data.batches import object_file, open_parquet

    with object_file(store, repo, ref, path) as file:
        reader = open_parquet(file, f"{repo}@{ref[:12]}:{path}")
        return summarize_reader(partition, reader, ds.target, ds.memory_budget_mb, ds.time_column or "")
