"""Rows to compare for drift, in bounded memory: a sample of a stream of batches and the exact counts beside it.

Each row's key is a hash (splitmix64) of its position in the stream, and the sample is the ``limit`` rows with the
smallest keys (bottom-k sampling): uniform without replacement, the same rows whatever batches the stream arrives
in, and every row, in order, when there are at most ``limit``. So a reference or a new version that fits is
compared whole (the one-chunk case), and a larger one by a sample of fixed size. Counted exactly beside it: the
rows, and the rows of each slice value (which decide what is compared).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SAMPLE_ROWS = 250_000  # rows kept of a side (reference or new); fewer: all of them
MISSING = "(missing)"
_MASKS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def category_keys(series: pd.Series) -> pd.Series:
    """A categorical column as comparable strings: 5.0 reads as "5", missing values as ``(missing)``."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    names = [str(int(u)) if isinstance(u, float | np.floating) and float(u).is_integer() else str(u)
             for u in uniques]
    return pd.Series(np.array([*names, MISSING], dtype=object)[codes], index=series.index)


def value_counts(series: pd.Series) -> dict[str, int]:
    """Rows per value of a slice column, by ``category_keys``."""
    return {str(k): int(n) for k, n in category_keys(series).value_counts().items()}


def row_keys(start: int, n: int, seed: int = 0) -> np.ndarray:
    """The sampling keys of rows ``start`` .. ``start + n - 1`` of a stream (splitmix64 of the position)."""
    import numpy as np

    golden, mul1, mul2 = (np.uint64(m) for m in _MASKS)
    x = np.arange(start, start + n, dtype=np.uint64) + np.uint64(seed) * golden
    x = (x ^ (x >> np.uint64(30))) * mul1
    x = (x ^ (x >> np.uint64(27))) * mul2
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True)
class Rows:
    """The rows of one side: all of them or a uniform sample (``frame``), with exact counts of all of them."""

    frame: pd.DataFrame
    total: int
    slices: dict[str, dict[str, int]]  # slice column -> value (``category_keys``) -> rows

    @classmethod
    def whole(cls, frame: pd.DataFrame, slices: Sequence[str]) -> Rows:
        """Every row in memory: the sample is the rows themselves."""
        return cls(frame, len(frame), {c: value_counts(frame[c]) for c in slices if c in frame.columns})

    def count(self, column: str, value: str) -> int:
        return self.slices.get(column, {}).get(value, 0)


class RowSample:
    """A bottom-k sample of batches of rows, fed one batch at a time (``add``), in memory of ``limit`` rows and one
    batch; ``batches`` counts what was fed."""

    def __init__(self, slices: Sequence[str], limit: int = SAMPLE_ROWS, seed: int = 0) -> None:
        import numpy as np

        if limit < 1:
            raise ValueError(f"drift: a sample holds at least one row, got limit={limit}")
        self.limit, self.seed, self.total, self.batches = limit, seed, 0, 0
        self._counts: dict[str, Counter[str]] = {c: Counter() for c in slices}
        self._frame: pd.DataFrame | None = None
        self._keys = np.empty(0, dtype=np.uint64)

    def add(self, frame: pd.DataFrame) -> None:
        import numpy as np
        import pandas as pd

        self.batches += 1
        for column, counts in self._counts.items():
            if column in frame.columns:
                counts.update(value_counts(frame[column]))
        keys = row_keys(self.total, len(frame), self.seed)
        self.total += len(frame)
        if self._keys.size >= self.limit:  # full: only rows below the largest kept key can enter
            take = np.flatnonzero(keys < self._keys.max())
            frame, keys = frame.iloc[take], keys[take]
        if self._frame is None:
            self._frame = frame.reset_index(drop=True)
        elif len(frame):
            self._frame = pd.concat([self._frame, frame], ignore_index=True)
        self._keys = np.concatenate([self._keys, keys])
        if self._keys.size > self.limit:  # keep the smallest keys, in stream order
            keep = np.sort(np.argpartition(self._keys, self.limit - 1)[: self.limit])
            self._frame, self._keys = self._frame.iloc[keep].reset_index(drop=True), self._keys[keep]

    def rows(self, columns: Iterable[str] = ()) -> Rows:
        """What was fed: the sample (no batch at all: an empty frame of ``columns``) and the exact counts."""
        import pandas as pd

        frame = self._frame if self._frame is not None else pd.DataFrame(columns=list(columns))
        return Rows(frame, self.total, {c: dict(counts) for c, counts in self._counts.items()})
