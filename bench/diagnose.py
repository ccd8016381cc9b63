"""Diagnosis benchmarks: the Bottlenecks page's logic on 1M telemetry rows (8 ranks x 125k steps).

Page logic = everything the page computes from the rows: milliseconds and ``other``, warm-up marks, the per-rank
summary (means, medians, p90), the verdict with its straggler search, and the chart series over steps. The
reference is one plain pandas groupby over the same rows (mean of the six time columns per rank). Both sides
run on the same in-memory frame in this process, back to back in pairs until the interval on their ratio decides
(``bench.interval``); the page's seconds are the fastest of those pairs. Each pass must find rank 5 the straggler
and each groupby the 8 ranks (``bench.checks``).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from bench.checks import expect, expect_equal
from bench.interval import Interval, decide
from bench.registry import Result, benchmark, smoke, toy
from mlassets.core.diagnose.report import diagnose_frame
from mlassets.core.diagnose.steps import COLUMNS, PARTS, over_steps

RANKS, STEPS, SLOW_RANK = 8, 125_000, 5
TARGET, MIN_PAIRS, MAX_PAIRS = 3.0, 3, 12


def telemetry(ranks: int = RANKS, steps: int = STEPS, seed: int = 0) -> pd.DataFrame:
    """Synthetic rows shaped like the training process's (seconds; rank 5 waits on input)."""
    rng = np.random.default_rng(seed)
    n = ranks * steps
    rank = np.repeat(np.arange(ranks, dtype=np.int32), steps)
    parts = {p: rng.gamma(4.0, 0.002, n) for p in PARTS}
    parts["t_data_wait"][rank == SLOW_RANK] += 0.05
    frame = pd.DataFrame({"attempt": np.ones(n, np.int32), "epoch": np.ones(n, np.int32),
                          "step": np.tile(np.arange(1, steps + 1, dtype=np.int32), ranks), "rank": rank, **parts})
    frame["t_step"] = sum(parts.values()) * 1.02
    frame["samples"], frame["gpu_util"], frame["gpu_mem_mb"] = 64, np.nan, np.nan
    return frame[list(COLUMNS)]


def page_logic(frame: pd.DataFrame) -> str:
    d = diagnose_frame(frame)
    over_steps(d.steps)
    return d.verdict.headline


def checked_page(frame: pd.DataFrame) -> str:
    """``page_logic`` on the benchmark's rows, which must find the slow rank the straggler."""
    headline = page_logic(frame)
    expect(headline.startswith(f"straggler: rank {SLOW_RANK},"),
           f"the page did not find rank {SLOW_RANK} the straggler: {headline}")
    return headline


def groupby(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("rank")[[*PARTS, "t_step"]].mean()


def measure() -> tuple[float, float, str, Interval]:
    """(fastest page, fastest groupby, the verdict, the interval on page / groupby)."""
    frame = telemetry(steps=toy(STEPS, 2_000))
    page, plain, verdicts = [], [], []

    def pair(_: int) -> float:
        start = time.perf_counter()
        verdicts.append(checked_page(frame))
        page.append(time.perf_counter() - start)
        start = time.perf_counter()
        means = groupby(frame)
        plain.append(time.perf_counter() - start)
        expect_equal(len(means), RANKS, "ranks of the groupby")
        return page[-1] / plain[-1]

    interval = decide(pair, TARGET, "lower", MIN_PAIRS, MAX_PAIRS)
    return min(page), min(plain), verdicts[-1], interval


_CACHE: dict[bool, tuple[float, float, str, Interval]] = {}  # per mode: measuring, smoke


def _measured() -> tuple[float, float, str, Interval]:
    if smoke() not in _CACHE:
        _CACHE[smoke()] = measure()
    return _CACHE[smoke()]


@benchmark("diagnose_page_1m_rows", goal="Bottlenecks page logic on 1M rows (8 ranks x 125k steps)",
           better="lower", target=2.0)
def diagnose_page_seconds() -> Result:
    page, plain, verdict, interval = _measured()
    return Result(page, "s", f"fastest of {len(interval.ratios)}; groupby {plain:.3f} s; verdict: {verdict}")


@benchmark("diagnose_page_vs_groupby", goal="page logic / one pandas groupby-mean, same 1M rows",
           better="lower", target=TARGET)
def diagnose_page_ratio() -> Result:
    page, plain, _, interval = _measured()
    return Result(interval.estimate, "x", f"geometric mean of the pairs' ratios; fastest page {page:.3f} s, "
                  f"groupby {plain:.3f} s", interval=interval)
