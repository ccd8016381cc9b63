"""Inference latency of a model's ``predict``: single-row p50/p99 and batch latency, measured in-process.

Single rows are sliced out of the sample *before* the clock starts, so only ``predict`` is timed. A few
warm-up calls run first (lazy initialization, allocator and thread-pool start-up are not inference).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd

Predict = Callable[[pd.DataFrame], np.ndarray]


def _timed(predict: Predict, frame: pd.DataFrame) -> float:
    start = time.perf_counter()
    predict(frame)
    return (time.perf_counter() - start) * 1000.0


def measure_latency(
    predict: Predict,
    rows: pd.DataFrame,
    n_single: int = 200,
    n_batches: int = 5,
    batch_rows: int = 1024,
    warmup: int = 3,
) -> dict[str, float]:
    """Time ``predict`` on ``n_single`` one-row frames and ``n_batches`` frames of ``batch_rows`` rows.

    Returns milliseconds: ``single_p50_ms``, ``single_p99_ms``, ``single_max_ms``, ``batch_p50_ms``,
    ``batch_p99_ms``; ``batch_rows`` (the batch size used, capped at the rows given) and ``rows_per_s``
    (batch throughput at the median batch); plus the call counts.
    """
    if len(rows) == 0:
        raise ValueError("latency needs at least one row")
    if n_single < 1 or n_batches < 1:
        raise ValueError(f"n_single and n_batches must be >= 1, got {n_single} and {n_batches}")
    rows = rows.reset_index(drop=True)
    singles = [rows.iloc[i % len(rows) : i % len(rows) + 1] for i in range(n_single)]
    size = min(batch_rows, len(rows))
    starts = [(j * size) % max(len(rows) - size + 1, 1) for j in range(n_batches)]
    batches = [rows.iloc[s : s + size] for s in starts]
    for i in range(warmup):
        predict(singles[i % n_single])
    predict(batches[0])
    single = np.array([_timed(predict, frame) for frame in singles])
    batch = np.array([_timed(predict, frame) for frame in batches])
    p50_batch = float(np.percentile(batch, 50))
    return {
        "single_p50_ms": float(np.percentile(single, 50)),
        "single_p99_ms": float(np.percentile(single, 99)),
        "single_max_ms": float(single.max()),
        "batch_rows": float(size),
        "batch_p50_ms": p50_batch,
        "batch_p99_ms": float(np.percentile(batch, 99)),
        "rows_per_s": float(size / (p50_batch / 1000.0)) if p50_batch > 0 else float("inf"),
        "n_single": float(n_single),
        "n_batches": float(n_batches),
    }
