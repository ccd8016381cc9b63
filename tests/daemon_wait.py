"""Waiting on a real Dagster daemon in the end-to-end tests: poll until a condition holds, up to a limit, and say
what the daemon logged when it exited or the limit passed (never a fixed sleep)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.5  # each wait ends within this of its condition; a poll is a few queries of the instance


def until(what: str, done: Callable[[], bool], proc: subprocess.Popen, log: Path, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not done():
        assert proc.poll() is None, f"the daemon exited while waiting for {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {what} within {limit_s:.0f} s:\n{log.read_text()[-3000:]}"
        time.sleep(POLL_S)
