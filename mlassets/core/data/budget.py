"""The memory budget of the data stages (``dataset.memory_budget_mb``): how many rows one batch may hold.

Ingest, validation, features and the split export never hold a whole data version: they read and write Parquet
in batches whose size follows from the budget and from how wide a row is, not from how many rows there are.
What a stage keeps besides its batch is small and bounded too (counts, the first offending values of a check,
the key hashes of the uniqueness check, spilled to disk beyond ``KEY_SHARE`` of the budget); the one exception
is a partition's target column (8 bytes a row), which its summary's exact quantiles need.
"""

from __future__ import annotations

import math

MIB = 1 << 20
BATCH_SHARE = 0.5  # of the budget, for one batch and its working copies; the rest: libraries, interpreter, state
WORKING_COPIES = 16  # a batch is held this many times over at most (Arrow, pandas objects, a check's output)
TYPED_COPIES = 5  # ... when it stays in Polars (validation, measured on a 416,666-row flights-scale batch: read,
# coerced, judged and its key hashed at a peak of 1.9x the batch above the libraries; 3.3x where every row fails)
KEY_SHARE = 0.125  # of the budget, for the key hashes of a uniqueness check before they spill to disk
MIN_ROWS, MAX_ROWS = 4096, 1 << 20
SPLIT_ROW_GROUP_ROWS = 65_536  # rows per row group of an exported split (a streaming loader reads one at a time)


def batch_rows(budget_mb: int, bytes_per_row: float, copies: int = WORKING_COPIES) -> int:
    """Rows of one batch whose ``copies`` fit ``BATCH_SHARE`` of the budget (within ``MIN_ROWS..MAX_ROWS``)."""
    usable = budget_mb * MIB * BATCH_SHARE
    rows = int(usable / (copies * max(bytes_per_row, 8.0)))
    return min(MAX_ROWS, max(MIN_ROWS, rows))


def key_buckets(rows: int, budget_mb: int, bytes_per_row: int = 16) -> int:
    """Buckets the key hashes of ``rows`` rows are spilled into so that one bucket fits ``KEY_SHARE`` of the budget
    (1: they stay in memory)."""
    return max(1, math.ceil(rows * bytes_per_row * 3 / (budget_mb * MIB * KEY_SHARE)))
