"""Step telemetry as arrays per rank, and its per-rank summary: the numbers every verdict is built from.

Times are seconds in the Parquet files and milliseconds here. ``other`` is what the measured parts leave of
a step. The first step of every attempt on every rank is warm-up (DDP bucket set-up, lazy allocations) and
is left out of the summaries, not out of the charts. Rows are taken as the training process writes them:
per rank, in step order (attempts one after the other). Means use every row; medians and p90 use at most
``MEDIAN_ROWS`` evenly spaced steps per rank, which keeps a 1M-row run interactive.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

PARTS = ("t_data_wait", "t_compute", "t_sync", "t_optim", "t_checkpoint")
TIMES = (*PARTS, "t_other")
LABELS = {"t_data_wait": "data wait", "t_compute": "compute", "t_sync": "gradient sync", "t_optim": "optimizer",
          "t_checkpoint": "checkpoint", "t_other": "other", "t_step": "step"}
COLUMNS = ("attempt", "epoch", "step", "rank", *PARTS, "t_step", "samples", "gpu_util", "gpu_mem_mb")
MEDIAN_ROWS = 10_000


def read_steps(directory: str | Path) -> pd.DataFrame:
    """Every rank's rows under ``directory`` (``rank<r>.parquet``); an empty frame when there are none."""
    files = sorted(Path(directory).glob("rank*.parquet"))
    if not files:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in COLUMNS})
    tables = []
    for path in files:
        table = pq.read_table(path)
        for column in ("gpu_util", "gpu_mem_mb"):  # files written before GPU columns existed
            if column not in table.column_names:
                table = table.append_column(column, pa.array(np.full(len(table), np.nan)))
        tables.append(table.select(list(COLUMNS)))
    return pa.concat_tables(tables).to_pandas()


@dataclass
class StepArrays:
    """The rows in ms as numpy columns, grouped by rank (``starts`` of each rank's block, ``ranks`` in order)."""

    rank: np.ndarray
    step: np.ndarray
    times: dict[str, np.ndarray]  # TIMES and t_step, ms
    gpu: dict[str, np.ndarray]  # gpu_util, gpu_mem_mb (NaN where not recorded)
    warmup: np.ndarray
    ranks: np.ndarray
    starts: np.ndarray  # len(ranks) + 1 boundaries

    def __len__(self) -> int:
        return len(self.rank)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Every row as a frame (ms), for charts of distributions."""
        return pd.DataFrame({"rank": self.rank, "step": self.step, **self.times, **self.gpu, "warmup": self.warmup})


def to_ms(frame: pd.DataFrame) -> StepArrays:
    """Milliseconds, ``t_other`` (never negative) and warm-up marks, grouped by rank."""
    rank = frame["rank"].to_numpy(np.int64)
    edges = np.flatnonzero(rank[1:] != rank[:-1]) + 1
    if len(rank) and len(edges) + 1 != len(np.unique(rank[np.r_[0, edges]])):  # interleaved: group (stable)
        frame = frame.take(np.argsort(rank, kind="stable"))
        rank = frame["rank"].to_numpy(np.int64)
        edges = np.flatnonzero(rank[1:] != rank[:-1]) + 1
    times = {c: frame[c].to_numpy(np.float64) * 1000.0 for c in (*PARTS, "t_step")}
    covered = times["t_data_wait"] + times["t_compute"] + times["t_sync"] + times["t_optim"] + times["t_checkpoint"]
    times["t_other"] = np.maximum(times["t_step"] - covered, 0.0)
    key = rank * 1_000_003 + frame["attempt"].to_numpy(np.int64)
    warmup = np.ones(len(rank), dtype=bool)
    warmup[1:] = key[1:] != key[:-1]
    starts = np.concatenate([[0], edges, [len(rank)]]).astype(np.int64)
    gpu = {c: frame[c].to_numpy(np.float64) for c in ("gpu_util", "gpu_mem_mb")}
    return StepArrays(rank, frame["step"].to_numpy(np.int64), times, gpu, warmup, rank[starts[:-1]], starts)


def _sample(warm: np.ndarray) -> np.ndarray:
    """Indices of at most MEDIAN_ROWS evenly spaced steady rows of one rank's block."""
    steady = np.flatnonzero(~warm) if warm.any() and not warm.all() else np.arange(len(warm))
    return steady[::-(-len(steady) // MEDIAN_ROWS)]


def rank_summary(s: StepArrays) -> pd.DataFrame:
    """Per rank (index): mean ms per step of every part, median and p90 step, median busy time, GPU means.

    ``busy`` is the step less gradient sync: the time a rank spends on its own work, not waiting for others.
    """
    blocks = len(s.ranks)
    counts = np.diff(s.starts).astype(np.float64)
    warm = np.add.reduceat(s.warmup.astype(np.float64), s.starts[:-1]) if len(s) else np.zeros(blocks)
    steady = np.where(counts > warm, counts - warm, counts)
    use_warm = counts > warm  # a rank with only warm-up rows keeps them
    out = pd.DataFrame(index=pd.Index(s.ranks, name="rank"))
    out["steps"] = steady.astype(np.int64)
    block_of_warm = np.searchsorted(s.starts, np.flatnonzero(s.warmup), side="right") - 1
    for column in (*TIMES, "t_step"):
        values = s.times[column]
        total = np.add.reduceat(values, s.starts[:-1])
        warm_total = np.bincount(block_of_warm, weights=values[s.warmup], minlength=blocks)
        out[column] = (total - np.where(use_warm, warm_total, 0.0)) / steady
    stats: dict[str, list[float]] = {k: [] for k in ("median_step", "p90_step", "median_busy",
                                                     *(f"median_{c}" for c in PARTS))}
    for i in range(blocks):
        lo, hi = s.starts[i], s.starts[i + 1]
        idx = _sample(s.warmup[lo:hi]) + lo
        step = s.times["t_step"][idx]
        sampled = np.stack([step, step - s.times["t_sync"][idx], *(s.times[c][idx] for c in PARTS)])
        medians = np.median(sampled, axis=1)
        stats["median_step"].append(float(medians[0]))
        stats["p90_step"].append(float(np.quantile(step, 0.9)))
        stats["median_busy"].append(float(medians[1]))
        for c, value in zip(PARTS, medians[2:], strict=True):
            stats[f"median_{c}"].append(float(value))
    for key, values in stats.items():
        out[key] = values
    for column, values in s.gpu.items():
        seen = ~np.isnan(values)
        if not seen.any():  # a CPU run
            out[column] = np.nan
            continue
        total = np.add.reduceat(np.where(seen, values, 0.0), s.starts[:-1]) if len(s) else np.zeros(blocks)
        n = np.add.reduceat(seen.astype(np.float64), s.starts[:-1]) if len(s) else np.zeros(blocks)
        out[column] = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    return out.sort_index()


def over_steps(s: StepArrays, points: int = 300) -> pd.DataFrame:
    """Mean ms of every part per rank over steps, in at most ``points`` buckets of steps per rank (charts)."""
    columns = [*TIMES, "t_step"]
    if not len(s):
        return pd.DataFrame(columns=["rank", "step", *columns, *s.gpu])
    lo, hi = int(s.step.min()), int(s.step.max())
    width = max(1, -(-(hi - lo + 1) // points))
    block = np.repeat(np.arange(len(s.ranks)), np.diff(s.starts))
    keys = block * (points + 1) + (s.step - lo) // width
    size = len(s.ranks) * (points + 1)
    counts = np.bincount(keys, minlength=size).astype(np.float64)
    keep = counts > 0
    cells = np.flatnonzero(keep)
    out = pd.DataFrame({"rank": s.ranks[cells // (points + 1)], "step": lo + (cells % (points + 1)) * width})
    runs = np.r_[0, np.flatnonzero(keys[1:] != keys[:-1]) + 1]
    ordered = len(runs) == len(cells) and bool(np.all(np.diff(keys[runs]) > 0))  # rows in step order: sum runs
    for column in columns:
        totals = np.add.reduceat(s.times[column], runs) if ordered else \
            np.bincount(keys, weights=s.times[column], minlength=size)[keep]
        out[column] = totals / counts[keep]
    for column, values in s.gpu.items():
        seen = ~np.isnan(values)
        if not seen.any():
            out[column] = np.nan
            continue
        n = np.bincount(keys[seen], minlength=size)[keep]
        total = np.bincount(keys[seen], weights=values[seen], minlength=size)[keep]
        out[column] = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    return out
