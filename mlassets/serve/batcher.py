"""Dynamic batching: concurrent requests merged into one forward pass, up to a row limit or a wait.

A request waits for others only while more are on their way (admitted by the server, not yet queued) and at
most ``wait_ms`` after it was queued; a lone request on an idle model runs at once. While a batch runs, new
requests queue up and go together in the next one. With batching off, every request is its own pass.

Every variant of an endpoint (the champion, an online test's canary or shadow) gets its batcher from
``Batcher.of(run, serving)``: one policy (``serving.batching``, ``max_batch_size``, ``batch_wait_ms``), and each
counts the requests on their way to it (``admit``), so a canary's passes wait for arriving requests as the
champion's do and the online test compares two equal batchers.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from mlassets.core.diagnose.host import on_thread
from mlassets.serve.rows import Rows

if TYPE_CHECKING:
    from mlassets.core.config.serving import ServingConfig


@dataclass(frozen=True)
class Timing:
    """Clock points (``time.time_ns``) of one forward pass, and its size; the CPU time its thread used (-1:
    unknown) and when the batcher held the batch open for arriving requests (``held_from_ns`` to ``held_to_ns``)."""

    start_ns: int
    preprocessed_ns: int
    done_ns: int
    rows: int
    requests: int
    cpu_ns: int = -1
    held_from_ns: int = 0
    held_to_ns: int = 0


@dataclass
class _Job:
    frame: pd.DataFrame | Rows
    queued_ns: int
    future: asyncio.Future = field(repr=False)


# run(frame) -> (answer per row, clock point after preprocessing, the model version that answered); a pass of
# requests checked as ``Rows`` gets them joined (``Rows.frame()`` makes the frame, where a runner needs one)
Runner = Callable[[pd.DataFrame | Rows], tuple[Any, int, str]]


class Arrival:
    """One request admitted for a batcher and not yet queued to it: counted in ``arriving`` until ``queued()``
    (once; later calls do nothing)."""

    def __init__(self, batcher: Batcher) -> None:
        self.batcher, self.open = batcher, True
        batcher.arriving += 1

    def queued(self) -> None:
        if self.open:
            self.open = False
            self.batcher.arriving -= 1


class Stopped(RuntimeError):
    """The batcher stopped before this request's pass ran (an online test's candidate that was dropped)."""


class Batcher:
    """Merges submitted frames into forward passes on one worker thread (the event loop stays free)."""

    def __init__(self, run: Runner, max_batch_size: int, wait_ms: float, enabled: bool = True,
                 on_batch: Callable[[Timing], None] | None = None) -> None:
        self.run, self.max_rows, self.wait_s, self.enabled = run, max_batch_size, wait_ms / 1000, enabled
        self.on_batch = on_batch
        self.arriving = 0  # requests admitted and being parsed: a batch waits for them (up to wait_ms)
        self._queue: deque[_Job] = deque()
        self._inflight: list[_Job] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="mlassets-model")

    @classmethod
    def of(cls, run: Runner, serving: ServingConfig, on_batch: Callable[[Timing], None] | None = None) -> Batcher:
        """The endpoint's batching policy, the same for every variant."""
        return cls(run, serving.max_batch_size, serving.batch_wait_ms, serving.batching, on_batch)

    def admit(self) -> Arrival:
        """Count a request on its way to this batcher (a pass waits for it, up to ``wait_ms``)."""
        return Arrival(self)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def depth(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for job in [*self._queue, *self._inflight]:  # nobody is left waiting on a pass that will not run
            if not job.future.done():
                job.future.set_exception(Stopped("the batcher stopped before this request's pass ran"))
        self._queue.clear()
        self._pool.shutdown(wait=True)

    async def submit(self, frame: pd.DataFrame | Rows) -> tuple[Any, str, int, Timing]:
        """``(answer, version, queued_ns, timing)`` for ``frame`` once its pass has run."""
        job = _Job(frame, time.time_ns(), asyncio.get_running_loop().create_future())
        self._queue.append(job)
        assert self._wake is not None, "Batcher.start() first"
        self._wake.set()
        answer, version, timing = await job.future
        return answer, version, job.queued_ns, timing

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            held = time.time_ns()
            if self.enabled:
                await self._gather()
            jobs = self._take()
            self._inflight = jobs
            await self._run(jobs, (held, time.time_ns()) if self.enabled else (0, 0))
            self._inflight = []

    async def _gather(self) -> None:
        """Wait for more requests while some are arriving, the batch has room, and the first may still wait."""
        deadline = self._queue[0].queued_ns / 1e9 + self.wait_s
        while self.arriving > 0 and sum(len(j.frame) for j in self._queue) < self.max_rows:
            left = deadline - time.time()
            if left <= 0:
                return
            assert self._wake is not None
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except TimeoutError:
                return

    def _take(self) -> list[_Job]:
        jobs = [self._queue.popleft()]
        rows = len(jobs[0].frame)
        while self.enabled and self._queue and rows + len(self._queue[0].frame) <= self.max_rows:
            job = self._queue.popleft()
            jobs.append(job)
            rows += len(job.frame)
        return jobs

    def _pass(self, parts: list[pd.DataFrame | Rows]) -> tuple[Any, int, str]:
        """The jobs' rows joined into one (on the worker thread), through the model."""
        frame: pd.DataFrame | Rows
        if all(isinstance(p, Rows) for p in parts):
            frame = Rows.join(parts)  # type: ignore[arg-type] - all Rows, checked
        else:
            frames = [p if isinstance(p, pd.DataFrame) else p.frame() for p in parts]
            frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return self.run(frame)

    async def _run(self, jobs: list[_Job], held: tuple[int, int] = (0, 0)) -> None:
        loop = asyncio.get_running_loop()
        start = time.time_ns()
        try:
            (answer, preprocessed, version), cpu = await loop.run_in_executor(
                self._pool, on_thread, self._pass, [j.frame for j in jobs])
        except Exception as exc:  # noqa: BLE001 - a bad pass must not take the others with it
            if len(jobs) > 1:  # one request's rows broke the pass: run each alone, only it fails
                for job in jobs:
                    await self._run([job])
                return
            if not jobs[0].future.done():
                jobs[0].future.set_exception(exc)
            return
        timing = Timing(start, preprocessed, time.time_ns(), sum(len(j.frame) for j in jobs), len(jobs), cpu, *held)
        if self.on_batch is not None:
            self.on_batch(timing)
        offset = 0
        for job in jobs:
            n = len(job.frame)
            if not job.future.done():
                job.future.set_result((answer[offset:offset + n], version, timing))
            offset += n
