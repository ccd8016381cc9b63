"""The host under a request: its CPU pressure, and the CPU time each span's own work used beside its wall time.

A server samples ``Pressure`` (Linux PSI ``/proc/pressure/cpu``: the share of time some task waited for a CPU,
measured between two samples from its ``total``, ``avg10`` at the first; without PSI the runnable tasks of
``/proc/loadavg`` against ``os.cpu_count()``) and records it on each request's root span; each stage span records
``cpu_ms``, the CPU time of the thread that did its work. On a saturated host, a CPU-bound stage's wall time beyond
its CPU time is time spent waiting for a CPU: the host's, not the stage's.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

PSI_FILE = Path("/proc/pressure/cpu")
LOADAVG_FILE = Path("/proc/loadavg")
SATURATED_PCT = 25.0  # some task waited for a CPU this share of the time: the host is saturated
ATTRIBUTES = {"cpu_pressure": "pressure_pct", "run_queue": "run_queue", "cores": "cores"}  # root span -> column
T = TypeVar("T")


@dataclass(frozen=True)
class Pressure:
    """The host's CPU pressure: % of time some task waited for a CPU (None without PSI), runnable tasks, cores."""

    pressure_pct: float | None
    run_queue: float
    cores: int

    @property
    def saturated(self) -> bool:
        """Some task waited for a CPU ``SATURATED_PCT`` of the time, or twice as many tasks were runnable as there
        are cores (PSI's "some" misses a hog that keeps every core busy while the server's own threads sleep
        between requests); without PSI, more runnable tasks than cores."""
        if self.pressure_pct is not None:
            return self.pressure_pct >= SATURATED_PCT or self.run_queue >= 2 * self.cores
        return self.run_queue > self.cores

    def sentence(self) -> str:
        said = f"CPU pressure {self.pressure_pct:.0f} %, " if self.pressure_pct is not None else ""
        return f"{said}run queue {self.run_queue:.0f} on {self.cores} cores"

    def attributes(self) -> dict[str, float | int]:
        """The root span's attributes (a missing PSI is left out)."""
        out: dict[str, float | int] = {"run_queue": self.run_queue, "cores": self.cores}
        if self.pressure_pct is not None:
            out["cpu_pressure"] = round(self.pressure_pct, 2)
        return out


def _psi() -> tuple[float, int] | None:
    """``(some avg10 %, some total µs)``, or None where the kernel has no PSI."""
    try:
        some = PSI_FILE.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    fields = dict(f.split("=", 1) for f in some[1:] if "=" in f)
    try:
        return float(fields["avg10"]), int(fields["total"])
    except (KeyError, ValueError):
        return None


def _runnable() -> float:
    try:
        return float(LOADAVG_FILE.read_text().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return 0.0


class Sampler:
    """The host's pressure, read at most every ``every_s`` (a request's end asks; the reads are cached between)."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        self._lock = threading.Lock()
        psi = _psi()  # the first request's pressure: since the server started, not PSI's 10 s average
        self._last: tuple[float, int] | None = (time.monotonic(), psi[1]) if psi is not None else None
        self._value: Pressure | None = None

    def sample(self) -> Pressure:
        now = time.monotonic()
        with self._lock:
            if self._value is not None and self._last is not None and now - self._last[0] < self.every_s:
                return self._value
            psi, pct = _psi(), None
            if psi is not None:
                avg10, total = psi
                pct = avg10
                if self._last is not None and now > self._last[0]:
                    pct = min(100.0, (total - self._last[1]) / ((now - self._last[0]) * 1e6) * 100)
                self._last = (now, total)
            else:
                self._last = (now, 0)
            self._value = Pressure(pct, _runnable(), os.cpu_count() or 1)
            return self._value


def on_thread(fn: Callable[..., T], *args: Any) -> tuple[T, int]:
    """``fn(*args)`` and the CPU time (ns) this thread spent in it: for work handed to a pool thread."""
    cpu = time.thread_time_ns()
    out = fn(*args)
    return out, time.thread_time_ns() - cpu


def attribute(spans: pd.DataFrame, root: str, name: str, stages: tuple[str, ...]) -> pd.DataFrame:
    """Per request (trace id) of kind ``root``: the sum of the stage spans' attribute ``name`` (NaN where none
    recorded it)."""
    if "attributes" not in spans:
        return pd.DataFrame(columns=list(stages), dtype="float64")
    mine = spans[(spans["root"] == root) & spans["name"].isin(stages)]
    values = mine["attributes"].map(lambda a: a.get(name) if isinstance(a, dict) else None)
    mine = mine.assign(value=pd.to_numeric(values, errors="coerce")).dropna(subset=["value"])
    if mine.empty:
        return pd.DataFrame(columns=list(stages), dtype="float64")
    table = mine.pivot_table(index="trace_id", columns="name", values="value", aggfunc="sum")
    return table.reindex(columns=list(stages))


def pressures(spans: pd.DataFrame, root: str) -> pd.DataFrame:
    """Per request of kind ``root``: the host's pressure recorded on its root span (``pressure_pct``, ``run_queue``,
    ``cores``; NaN where not recorded)."""
    if "attributes" not in spans:
        return pd.DataFrame(columns=list(ATTRIBUTES.values()), dtype="float64")
    top = spans[(spans["root"] == root) & (spans["parent_id"] == "")]
    rows = {r.trace_id: {col: (r.attributes or {}).get(key) for key, col in ATTRIBUTES.items()}
            for r in top.itertuples() if isinstance(r.attributes, dict)}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(ATTRIBUTES.values()))
    return frame.apply(pd.to_numeric, errors="coerce")


def pressure_of(frame: pd.DataFrame) -> Pressure | None:
    """The mean pressure of some requests' rows (``pressures``), None when none recorded any."""
    if frame.empty or frame["cores"].isna().all():
        return None
    pct = frame["pressure_pct"].mean()
    return Pressure(None if pd.isna(pct) else float(pct), float(frame["run_queue"].mean()),
                    int(frame["cores"].max()))
