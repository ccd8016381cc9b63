"""The boosted-trees loop, for either library: rounds in chunks, the validation metric after every round, early
stopping, a checkpoint at the end of every chunk, exact resume, step telemetry.

Training is defined as chunks of ``rounds_per_checkpoint`` rounds. Each chunk starts a fresh booster from the
previous chunk's checkpoint contents (the model bytes and the scores the library carries) with sampling seeds
derived from (seed, chunk index); the checkpoint is written at the chunk's end. An unkilled run and one killed
anywhere and resumed from its newest checkpoint therefore make the same library calls with the same inputs, and
end with the same booster. The chunk length is part of the numbers (``resume_key``'s ``numeric``).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mlassets.core.train.checkpoint.trees import Progress, TreeCheckpoints
from mlassets.core.train.metric_sinks import MetricsSink, NullSink
from mlassets.core.train.objectives import VAL_METRIC, validation_metric
from mlassets.core.train.steplog import StepLog, aggregate
from mlassets.core.train.trees.rows import TreeSplits

NAN_GPU = (math.nan, math.nan)


class Engine(Protocol):
    """One library's side of the loop (``lightgbm_lib.Engine``, ``xgboost_lib.Engine``)."""

    model_file: str
    carried: tuple[str, ...]  # the score arrays a checkpoint carries to the next chunk

    def begin(self, chunk: int, model: bytes | None, arrays: dict[str, np.ndarray]) -> None: ...

    def step(self, round_index: int) -> None: ...

    def val_raw(self) -> np.ndarray: ...

    def end(self) -> tuple[bytes, dict[str, np.ndarray]]: ...


@dataclass
class Plan:
    """How many rounds, when to stop early, how long a chunk is."""

    rounds: int
    early_stopping_rounds: int  # 0: never
    per_chunk: int


@dataclass
class Watch:
    """What watches a run without changing its numbers: checkpoints, telemetry, metrics, faults, a callback."""

    checkpoints: TreeCheckpoints | None = None
    steps: StepLog | None = None
    sink: MetricsSink | None = None
    telemetry_every: int = 0
    on_round: Callable[[int, float], None] | None = None  # tuning's report (it may raise to prune)
    crash: Callable[[int], None] | None = None  # faults.maybe_crash
    round_delay_s: float = 0.0  # the slow-rank fault
    log: Callable[[str], None] = lambda msg: None


@dataclass
class Timing:
    loop_seconds: float = 0.0
    validation_seconds: float = 0.0
    resumed_from: int = 0


def fit(engine: Engine, splits: TreeSplits, plan: Plan, watch: Watch) -> tuple[Progress, Timing]:
    """Train until ``plan.rounds`` or early stopping, resuming from the newest checkpoint of this run if any."""
    timing = Timing()
    progress = watch.checkpoints.resume(engine.carried) if watch.checkpoints is not None else None
    if progress is not None:
        timing.resumed_from = progress.round
        if watch.steps is not None:
            watch.steps.resume(progress.round)
        watch.log(f"resumed from checkpoint step-{progress.round:09d}: round {progress.round}"
                  + (" (finished)" if progress.finished else ""))
    progress = progress or Progress()
    rounds = _Rounds(splits, watch, timing)
    while not progress.finished:
        chunk = progress.round // plan.per_chunk
        started = time.perf_counter()
        engine.begin(chunk, progress.model, progress.arrays)
        progress.arrays = {}  # the engine holds what it needs of them (n floats each); the chunk's end gives the next
        rounds.overhead = time.perf_counter() - started  # a chunk's start counts as checkpoint time of its first round
        end = min((chunk + 1) * plan.per_chunk, plan.rounds)
        while True:
            t0 = time.perf_counter()
            if watch.round_delay_s:
                time.sleep(watch.round_delay_s)
            engine.step(progress.round)
            t1 = time.perf_counter()
            metric = validation_metric(splits.task, engine.val_raw(), splits.y_val, splits.center, splits.scale)
            t2 = time.perf_counter()
            r = _advance(progress, metric, plan)
            last = r == end or progress.finished
            if last:
                progress.model, progress.arrays = engine.end()
            if last and watch.checkpoints is not None:  # the rows up to a checkpoint are on disk before it is
                watch.checkpoints.save(progress, metric,
                                       before_commit=functools.partial(rounds.record, chunk + 1, r, t0, t1, t2, True))
            else:
                rounds.record(chunk + 1, r, t0, t1, t2, flush=False)
            rounds.sink.log({rounds.name: metric}, step=r)
            if watch.on_round is not None:
                watch.on_round(r, metric)
            if watch.crash is not None:
                watch.crash(r)
            if last:
                break
    return progress, timing


class _Rounds:
    """The per-round telemetry row and the periodic aggregates to the metrics sink."""

    def __init__(self, splits: TreeSplits, watch: Watch, timing: Timing) -> None:
        self.n_train, self.watch, self.timing = splits.n_train, watch, timing
        self.name = f"val_{VAL_METRIC[splits.task]}"
        self.sink = watch.sink or NullSink()
        self.overhead = 0.0

    def record(self, chunk: int, r: int, t0: float, t1: float, t2: float, flush: bool) -> None:
        t3 = time.perf_counter()
        extra, self.overhead = self.overhead, 0.0
        self.timing.loop_seconds += t3 - t0 + extra
        self.timing.validation_seconds += t2 - t1
        steps = self.watch.steps
        if steps is None:
            return
        steps.add(chunk, r, (0.0, t2 - t0, 0.0, 0.0, t3 - t2 + extra), t3 - t0 + extra, self.n_train, NAN_GPU)
        every = self.watch.telemetry_every
        if every and r % every == 0:
            self.sink.log({f"telemetry/{k}": v for k, v in aggregate(steps.window()).items()}, step=r)
        if flush:
            steps.flush(wait=True)


def _advance(progress: Progress, metric: float, plan: Plan) -> int:
    """One more round done: its metric in the curves, the best round (the earliest on ties), whether to stop."""
    progress.round += 1
    r = progress.round
    progress.curves.append({"epoch": r, "val_metric": metric})
    if metric < progress.best_metric:
        progress.best_round, progress.best_metric = r, metric
    stop = plan.early_stopping_rounds > 0 and r - progress.best_round >= plan.early_stopping_rounds
    progress.finished = stop or r >= plan.rounds
    return r


def describe(progress: Progress, plan: Plan) -> str:
    why = "early stopping" if progress.round < plan.rounds else "all rounds"
    return (f"{progress.round} rounds ({why}); best round {progress.best_round}: "
            f"{progress.best_metric:.4f}")
