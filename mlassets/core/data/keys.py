"""The key check across batches: which rows share their key with another row, in bounded memory.

Each batch's key columns, as the schema coerces them (numbers as float64, text, UTC times), are hashed to 64
bits. The hashes stay in memory, or are spilled to disk in buckets (by hash) when ``budget.key_buckets`` says
they would not fit. A hash seen more than once makes its rows candidates; only those rows are read again and
their coerced keys are compared (``validate``), so a hash collision never fails a table.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.data.budget import key_buckets

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import polars as pl


def _canonical(frame: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    exprs = []
    for name, dtype in frame.schema.items():
        column = pl.col(name)
        if dtype.is_numeric():
            exprs.append((column.cast(pl.Float64) + 0.0).fill_nan(None))  # -0.0 is 0.0, NaN missing: as pandas
        elif isinstance(dtype, pl.Datetime):
            exprs.append(column.cast(pl.Datetime("ns", "UTC") if dtype.time_zone else pl.Datetime("ns")))
        else:
            exprs.append(column.cast(pl.String))
    return frame.select(exprs)


def canonical_keys(frame: pl.DataFrame | pd.DataFrame, key: list[str]) -> pl.DataFrame:
    """The ``key`` columns as the schema coerces them (numbers as float64, text, UTC times): equal keys are equal
    rows in every batch and every partition."""
    import polars as pl

    if not isinstance(frame, pl.DataFrame):
        part = frame[key]
        try:
            frame = pl.from_pandas(part)
        except (TypeError, ValueError, pl.exceptions.PolarsError):  # mixed objects: a column that failed coercion
            frame = pl.from_pandas(part.astype({c: str for c in key if part[c].dtype == object}))
    return _canonical(frame.select(key))


def key_hashes(frame: pl.DataFrame | pd.DataFrame, key: list[str]) -> np.ndarray:
    """64-bit hashes of each row's key (uint64, in row order); equal keys hash equal in every batch."""
    return canonical_keys(frame, key).hash_rows(seed=0).to_numpy()


def _repeated(hashes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The ids whose hash occurs more than once, sorted (counting distinct hashes first: with none repeated, as
    is usual, nothing is sorted)."""
    import numpy as np
    import polars as pl

    if pl.Series(hashes).n_unique() == len(hashes):
        return np.empty(0, dtype=np.int64)
    ordered = np.sort(hashes)
    twice = ordered[1:][ordered[1:] == ordered[:-1]]
    if not twice.size:
        return np.empty(0, dtype=np.int64)
    return np.sort(ids[np.isin(hashes, twice)])


class KeyIndex:
    """The key hashes of a table's rows in order; ``candidates()`` are the rows whose hash repeats."""

    def __init__(self, rows: int, budget_mb: int) -> None:
        self.buckets = key_buckets(rows, budget_mb)
        self.rows = 0
        self._parts: list[np.ndarray] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="mlassets-keys-") if self.buckets > 1 else None

    def add(self, hashes: np.ndarray) -> None:
        import numpy as np

        first, self.rows = self.rows, self.rows + len(hashes)
        if self._tmp is None:
            self._parts.append(hashes)
            return
        ids = np.arange(first, self.rows, dtype=np.int64)
        bucket = hashes % np.uint64(self.buckets)
        for b in range(self.buckets):
            chosen = bucket == b
            if chosen.any():
                with open(Path(self._tmp.name) / f"{b}.bin", "ab") as f:
                    np.stack([hashes[chosen].view(np.int64), ids[chosen]], axis=1).tofile(f)

    def candidates(self) -> np.ndarray:
        """Row numbers (0-based, across all batches) whose key hash occurs more than once, sorted."""
        import numpy as np

        if self._tmp is None:
            hashes = np.concatenate(self._parts) if self._parts else np.empty(0, dtype=np.uint64)
            self._parts = []
            return _repeated(hashes, np.arange(len(hashes), dtype=np.int64))
        found = []
        for file in sorted(Path(self._tmp.name).glob("*.bin")):
            pairs = np.fromfile(file, dtype=np.int64).reshape(-1, 2)
            found.append(_repeated(pairs[:, 0], pairs[:, 1]))
        return np.sort(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
