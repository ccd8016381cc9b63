"""The training target as the derived thresholds read it: its finite values' count, range, mean and median.

``TrainTarget.of`` takes a column in memory. ``streamed`` takes it batch by batch and never holds it: the count,
range and sum accumulate as the batches pass, the finite values are spilled to a temporary file of raw float64s,
and the median is selected exactly from that file, a chunk at a time, by a radix selection on the values'
order-preserving 64-bit keys (a pass per 16 bits until the middle rank's bucket is small enough to sort: mostly two
passes). So the median is the one ``np.median`` gives (the mean of the two middle values for an even count); the
mean is the same to float rounding (summed batch by batch).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

CHUNK = 1 << 18  # values read back from the spill file at a time (2 MiB; its keys and masks, a few times that)
GATHER = 1 << 20  # a rank's bucket of at most this many values is sorted in memory (8 MiB)
DIGIT_BITS = 16


@dataclass(frozen=True)
class TrainTarget:
    """The finite training targets: how many, their range, mean and median (NaN when there are none)."""

    n: int
    low: float
    high: float
    mean: float
    median: float

    @classmethod
    def of(cls, y: np.ndarray) -> TrainTarget:
        import numpy as np

        y = np.asarray(y, dtype=np.float64)
        y = y[np.isfinite(y)]
        if not y.size:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"))
        return cls(int(y.size), float(y.min()), float(y.max()), float(np.mean(y)), float(np.median(y)))


def as_train_target(train_y: np.ndarray | TrainTarget) -> TrainTarget:
    return train_y if isinstance(train_y, TrainTarget) else TrainTarget.of(train_y)


def _keys(values: np.ndarray) -> np.ndarray:
    """uint64 keys in the order of the float64 values (negative values' bits flipped, positive ones' sign set)."""
    import numpy as np

    bits = values.view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    return np.where(negative, ~bits, bits | np.uint64(1 << 63))


def _value(key: int) -> float:
    import numpy as np

    bits = key ^ (1 << 63) if key >> 63 else ~key & ((1 << 64) - 1)
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def _chunks(path: Path, n: int) -> Iterable[np.ndarray]:
    import numpy as np

    with path.open("rb") as fh:
        for start in range(0, n, CHUNK):
            yield np.fromfile(fh, dtype=np.float64, count=min(CHUNK, n - start))


def _select(path: Path, n: int, ranks: tuple[int, ...]) -> list[float]:
    """The values of the given 0-based ranks in sorted order, from the ``n`` values of the spill file: a pass per
    16 bits of the key narrows each rank to a bucket, until the bucket has at most ``GATHER`` values, then sorted."""
    import numpy as np

    found: list[float | None] = [None] * len(ranks)
    prefixes, wanted, sizes = [0] * len(ranks), list(ranks), [n] * len(ranks)
    for shift in range(64 - DIGIT_BITS, -DIGIT_BITS, -DIGIT_BITS):
        open_ranks = [i for i in range(len(ranks)) if found[i] is None]
        if not open_ranks:
            break
        top = shift + DIGIT_BITS  # the bits above ``shift`` are a rank's prefix
        counts = {i: np.zeros(1 << DIGIT_BITS, dtype=np.int64) for i in open_ranks if sizes[i] > GATHER}
        gathered: dict[int, list[np.ndarray]] = {i: [] for i in open_ranks if sizes[i] <= GATHER}
        for chunk in _chunks(path, n):
            keys = _keys(chunk)
            high = keys >> np.uint64(top) if top < 64 else np.zeros_like(keys)
            for i in gathered:
                gathered[i].append(chunk[high == np.uint64(prefixes[i])])
            if counts:
                digits = ((keys >> np.uint64(shift)) & np.uint64((1 << DIGIT_BITS) - 1)).astype(np.int64)
                for i, count in counts.items():
                    count += np.bincount(digits[high == np.uint64(prefixes[i])], minlength=1 << DIGIT_BITS)
        for i, parts in gathered.items():
            found[i] = float(np.sort(np.concatenate(parts))[wanted[i]])
        for i, count in counts.items():
            cumulative = np.cumsum(count)
            digit = int(np.searchsorted(cumulative, wanted[i], side="right"))
            wanted[i] -= int(cumulative[digit - 1]) if digit else 0
            prefixes[i], sizes[i] = (prefixes[i] << DIGIT_BITS) | digit, int(count[digit])
    return [value if value is not None else _value(prefixes[i]) for i, value in enumerate(found)]


def streamed(batches: Iterable[np.ndarray], spill_dir: str | Path | None = None) -> TrainTarget:
    """``TrainTarget`` of the finite values of every batch, holding one batch (and a chunk of the spill) at a time."""
    import numpy as np

    n, low, high, total = 0, np.inf, -np.inf, 0.0
    with tempfile.TemporaryDirectory(prefix="mlassets-target-", dir=spill_dir) as tmp:
        path = Path(tmp) / "target.f64"
        with path.open("wb") as fh:
            for batch in batches:
                y = np.asarray(batch, dtype=np.float64)
                y = y[np.isfinite(y)]
                if y.size:
                    n, low, high = n + y.size, min(low, float(y.min())), max(high, float(y.max()))
                    total += float(np.sum(y))
                    y.tofile(fh)
        if not n:
            return TrainTarget.of(np.empty(0))
        middle = _select(path, n, (n // 2,) if n % 2 else (n // 2 - 1, n // 2))
    median = middle[0] if len(middle) == 1 else float(np.mean(middle))
    return TrainTarget(n, low, high, total / n, median)
