"""A tiny benchmark registry.

To add a row: in a new ``bench/<topic>.py`` module, decorate a function that returns a ``Result``::

    @benchmark("my_row", goal="what is measured", better="lower", target=2.0)
    def my_row() -> Result:
        return Result(value=..., unit="s", detail="both sides measured in this run")

then add ``"bench.<topic>"`` to ``MODULES`` in ``bench/__main__.py`` so the runner imports it.
Each benchmark runs in a fresh temporary ``$MLASSETS_HOME``. It checks the work it timed (``bench.checks``): a
failure raises, and the runner prints no figure for it. A ratio against a noisy anchor repeats its pairs until an
interval decides (``bench.interval.decide``) and returns that interval with its figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from bench.interval import Interval

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Result:
    """What one benchmark measured: a figure or ratio, its unit and a human-readable detail."""

    value: float
    unit: str
    detail: str = ""
    interval: Interval | None = None  # set: met/missed is decided by the whole interval, not the figure


@dataclass(frozen=True)
class Benchmark:
    """A registered benchmark: its goal is ``value <= target`` (lower) or ``value >= target`` (higher)."""

    name: str
    goal: str
    better: Better
    target: float
    fn: Callable[[], Result]

    def met(self, value: float) -> bool:
        if math.isnan(value):
            return False
        return value <= self.target if self.better == "lower" else value >= self.target

    def verdict(self, result: Result) -> str:
        """``yes`` or ``NO`` for the figure; with an interval: ``yes``, ``NO`` or ``undecided`` (not shown met)."""
        if result.interval is not None:
            return {"met": "yes", "missed": "NO"}.get(result.interval.verdict(self.target, self.better), "undecided")
        return "yes" if self.met(result.value) else "NO"

    def goal_text(self, unit: str = "") -> str:
        op = "<=" if self.better == "lower" else ">="
        return f"{self.goal} {op} {self.target:g}{f' {unit}' if unit else ''}"


REGISTRY: dict[str, Benchmark] = {}


def benchmark(name: str, goal: str, better: Better, target: float) -> Callable[[Callable[[], Result]],
                                                                                Callable[[], Result]]:
    """Register the decorated function as the benchmark ``name``; the function is returned unchanged."""
    if better not in ("lower", "higher"):
        raise ValueError(f"benchmark {name!r}: better must be 'lower' or 'higher', not {better!r}")

    def register(fn: Callable[[], Result]) -> Callable[[], Result]:
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} is already registered")
        REGISTRY[name] = Benchmark(name, goal, better, float(target), fn)
        return fn

    return register


def registered() -> list[Benchmark]:
    """All registered benchmarks, in registration order."""
    return list(REGISTRY.values())
