"""Inference latency of a model's ``predict``, measured in-process: single rows and batches.

Single rows are sliced out of the sample *before* the clock starts, so only ``predict`` is timed. A few
warm-up calls run first (lazy initialization, allocator and thread-pool start-up are not inference).

What the gate judges must not flip with the load of the machine, so two models are timed *interleaved*
(``interleaved_singles``): in each of ``ROUNDS`` rounds both models predict the same rows, call after call in
alternating order, so whatever else runs on the CPU slows both alike. Each round gives one median per model;
the candidate against the champion is the ratio of the medians of those round medians, with a bootstrap
interval over rounds (``latency_change``), and the absolute budget reads the candidate's median of round medians.
A p99 of a few hundred calls is shown, never gated: it measures the neighbours on the CPU as much as the model.
Models are timed at a fixed torch thread count (``torch_threads``; the pipeline's ``training.threads``): with
more threads than free cores, a wide layer's thread pool waits on the neighbours and a small one's does not.

When the host is so loaded that wall time says more about the neighbours than about the models, nothing is judged:
``on_cpu`` measures the share of the timed window this process spent on a CPU (its CPU time, all threads, over the
wall time), and below ``LOADED_CPU_SHARE`` the gate's latency rules are unjudged (they pass, saying why).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the gate's rules read this module while the definitions load: no dataframe stack then
    import pandas as pd

Predict = Callable[["pd.DataFrame"], np.ndarray]
ROUNDS, CALLS = 15, 8  # single-row calls per model: ROUNDS x CALLS
LOADED_CPU_SHARE = 0.5  # on a CPU less than half the timed wall time: the host's load, not the model, set it


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """torch's intra-op thread count set to ``threads`` for the block, then restored."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def on_cpu() -> Iterator[list[float]]:
    """Yields a list that holds, once the block ends, the CPU seconds of this process (every thread) over the
    block's wall seconds: about 1 (or more, with several threads busy) on a host with a core to spare, low when the
    process waited for a CPU (or, as a model that sleeps, for nothing on a CPU)."""
    share: list[float] = []
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield share
    finally:
        elapsed = time.perf_counter() - wall
        share.append((time.process_time() - cpu) / elapsed if elapsed > 0 else 1.0)


def loaded_host(share: float | None) -> str:
    """Why latency timed at ``share`` (``on_cpu``) is not judged: the host's load set it; ``""`` when it may be."""
    if share is None or float(share) >= LOADED_CPU_SHARE:
        return ""
    return (f"unjudged: this process was on a CPU {float(share) * 100:.0f}% of the wall time it timed the calls, "
            f"under {LOADED_CPU_SHARE * 100:g}%, so the host's load set the latency")


def _timed(predict: Predict, frame: pd.DataFrame) -> float:
    start = time.perf_counter()
    predict(frame)
    return (time.perf_counter() - start) * 1000.0


def _singles(rows: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    if len(rows) == 0:
        raise ValueError("latency needs at least one row")
    rows = rows.reset_index(drop=True)
    return [rows.iloc[i % len(rows) : i % len(rows) + 1] for i in range(n)]


def measure_batches(predict: Predict, rows: pd.DataFrame, n_batches: int = 5,
                    batch_rows: int = 1024) -> dict[str, float]:
    """``batch_p50_ms``, ``batch_p99_ms``, ``batch_rows`` (capped at the rows given), ``rows_per_s`` (at the
    median batch) and ``n_batches``."""
    if len(rows) == 0 or n_batches < 1:
        raise ValueError(f"batches need rows and n_batches >= 1, got {len(rows)} rows and {n_batches}")
    rows = rows.reset_index(drop=True)
    size = min(batch_rows, len(rows))
    starts = [(j * size) % max(len(rows) - size + 1, 1) for j in range(n_batches)]
    batches = [rows.iloc[s : s + size] for s in starts]
    predict(batches[0])
    batch = np.array([_timed(predict, frame) for frame in batches])
    p50 = float(np.percentile(batch, 50))
    return {"batch_rows": float(size), "batch_p50_ms": p50, "batch_p99_ms": float(np.percentile(batch, 99)),
            "rows_per_s": float(size / (p50 / 1000.0)) if p50 > 0 else float("inf"), "n_batches": float(n_batches)}


def measure_latency(
    predict: Predict, rows: pd.DataFrame, n_single: int = 200, n_batches: int = 5, batch_rows: int = 1024,
    warmup: int = 3,
) -> dict[str, float]:
    """One model alone: ``n_single`` one-row frames (``single_p50_ms``, ``single_p99_ms``, ``single_max_ms``) and
    ``measure_batches``; plus the call counts. For a benchmark; the gate reads ``interleaved_singles``."""
    if n_single < 1:
        raise ValueError(f"n_single must be >= 1, got {n_single}")
    singles = _singles(rows, n_single)
    for i in range(warmup):
        predict(singles[i % n_single])
    single = np.array([_timed(predict, frame) for frame in singles])
    return {"single_p50_ms": float(np.percentile(single, 50)), "single_p99_ms": float(np.percentile(single, 99)),
            "single_max_ms": float(single.max()), **measure_batches(predict, rows, n_batches, batch_rows),
            "n_single": float(n_single)}


def interleaved_singles(predicts: Mapping[str, Predict], rows: pd.DataFrame, rounds: int = ROUNDS,
                        calls: int = CALLS, warmup: int = 3) -> dict[str, np.ndarray]:
    """Milliseconds of single-row calls, ``[rounds, calls]`` per model: every model predicts the same row in turn
    (the order rotating from one row to the next), so load on the machine falls on all of them alike."""
    if rounds < 1 or calls < 1:
        raise ValueError(f"rounds and calls must be >= 1, got {rounds} and {calls}")
    names = list(predicts)
    singles = _singles(rows, rounds * calls)
    for i in range(warmup):
        for name in names:
            predicts[name](singles[i % len(singles)])
    out = {name: np.empty((rounds, calls)) for name in names}
    for i, frame in enumerate(singles):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            out[name][i // calls, i % calls] = _timed(predicts[name], frame)
    return out


def median_of_medians(times: np.ndarray) -> float:
    """The median over rounds of each round's median: a spike or a busy round moves it little."""
    return float(np.median(np.median(times, axis=1)))


def latency_change(candidate: np.ndarray, champion: np.ndarray, samples: int = 2000, confidence: float = 0.95,
                   seed: int = 0) -> tuple[float, float, float]:
    """``(change, low, high)``: the candidate's median of round medians over the champion's, minus 1, and its
    bootstrap interval over rounds (both models' rounds resampled together: they ran side by side)."""
    cand, champ = np.median(candidate, axis=1), np.median(champion, axis=1)
    idx = np.random.default_rng([seed, 0x1A7]).integers(0, len(cand), size=(samples, len(cand)))
    boot = np.median(cand[idx], axis=1) / np.median(champ[idx], axis=1) - 1.0
    alpha = 1.0 - confidence
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return float(np.median(cand) / np.median(champ) - 1.0), float(low), float(high)
