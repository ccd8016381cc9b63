"""Drive a scheduler by hand: tick until a condition holds (no fixed sleeps), or fail naming the jobs' states."""

from __future__ import annotations

import time
from collections.abc import Callable

from mlassets.core.fleet.scheduler import Scheduler


def until(sched: Scheduler, predicate: Callable[[], bool], timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sched.tick()
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not reached: {sched.table.jobs()}")
