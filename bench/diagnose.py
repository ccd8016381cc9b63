"""Diagnosis benchmarks: the Bottlenecks page's logic on 1M telemetry rows (8 ranks x 125k steps).

Page logic = everything the page computes from the rows: milliseconds and ``other``, warm-up marks, the per-rank
summary (means, medians, p90), the verdict with its straggler search, and the chart series over steps. The
reference is one plain pandas groupby over the same rows (mean of the six time columns per rank). Both sides
run on the same in-memory frame in this process, alternated, best of several repeats.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from bench.registry import Result, benchmark
from mlassets.core.diagnose.report import diagnose_frame
from mlassets.core.diagnose.steps import COLUMNS, PARTS, over_steps

RANKS, STEPS, REPEATS = 8, 125_000, 3


def telemetry(ranks: int = RANKS, steps: int = STEPS, seed: int = 0) -> pd.DataFrame:
    """Synthetic rows shaped like the training process's (seconds; rank 5 waits on input)."""
    rng = np.random.default_rng(seed)
    n = ranks * steps
    rank = np.repeat(np.arange(ranks, dtype=np.int32), steps)
    parts = {p: rng.gamma(4.0, 0.002, n) for p in PARTS}
    parts["t_data_wait"][rank == 5] += 0.05
    frame = pd.DataFrame({"attempt": np.ones(n, np.int32), "epoch": np.ones(n, np.int32),
                          "step": np.tile(np.arange(1, steps + 1, dtype=np.int32), ranks), "rank": rank, **parts})
    frame["t_step"] = sum(parts.values()) * 1.02
    frame["samples"], frame["gpu_util"], frame["gpu_mem_mb"] = 64, np.nan, np.nan
    return frame[list(COLUMNS)]


def page_logic(frame: pd.DataFrame) -> str:
    d = diagnose_frame(frame)
    over_steps(d.steps)
    return d.verdict.headline


def groupby(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("rank")[[*PARTS, "t_step"]].mean()


def measure() -> tuple[float, float, str]:
    frame = telemetry()
    page, plain, verdict = [], [], ""
    for _ in range(REPEATS):
        start = time.perf_counter()
        verdict = page_logic(frame)
        page.append(time.perf_counter() - start)
        start = time.perf_counter()
        groupby(frame)
        plain.append(time.perf_counter() - start)
    return min(page), min(plain), verdict


_CACHE: dict[str, tuple[float, float, str]] = {}


def _measured() -> tuple[float, float, str]:
    if "m" not in _CACHE:
        _CACHE["m"] = measure()
    return _CACHE["m"]


@benchmark("diagnose_page_1m_rows", goal="Bottlenecks page logic on 1M rows (8 ranks x 125k steps)",
           better="lower", target=2.0)
def diagnose_page_seconds() -> Result:
    page, plain, verdict = _measured()
    return Result(page, "s", f"groupby {plain:.3f} s; verdict: {verdict}")


@benchmark("diagnose_page_vs_groupby", goal="page logic / one pandas groupby-mean, same 1M rows",
           better="lower", target=3.0)
def diagnose_page_ratio() -> Result:
    page, plain, _ = _measured()
    return Result(page / plain, "x", f"page {page:.3f} s, groupby {plain:.3f} s (best of {REPEATS})")
