"""A tiny benchmark registry.

To add a row: in a new ``bench/<topic>.py`` module, decorate a function that returns a ``Result``::

    @benchmark("my_row", goal="what is measured", better="lower", target=2.0)
    def my_row() -> Result:
        return Result(value=..., unit="s", detail="both sides measured in this run")

The runner imports every ``bench/*.py`` module, so the new row is listed, run and smoke-tested (``tests/bench``) as
it is. Each benchmark runs in a fresh temporary ``$MLASSETS_HOME``. It checks the work it timed (``bench.checks``): a
failure raises, and the runner prints no figure for it. A ratio against a noisy anchor repeats its pairs until an
interval decides (``bench.interval.decide``) and returns that interval with its figure.

Smoke mode (``python -m bench --smoke``; the test suite runs every benchmark so): the same work at a toy size, every
check of it made, no goal judged. A benchmark states its sizes as ``toy(full, small)`` (or asks ``smoke()``), so
that its smoke run is cheap; a smoke run whose work fails crashes as a measuring run does.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

if TYPE_CHECKING:
    from bench.interval import Interval

Better = Literal["lower", "higher"]
T = TypeVar("T")
_SMOKE = [False]


def smoke() -> bool:
    """Whether the benchmarks run in smoke mode (toy sizes, checked work, no goal judged)."""
    return _SMOKE[0]


def toy(full: T, small: T) -> T:
    """``full`` when measuring; ``small`` in smoke mode."""
    return small if _SMOKE[0] else full


@contextlib.contextmanager
def smoke_mode(on: bool = True) -> Iterator[None]:
    """Run the benchmarks called inside in smoke mode (``on``) or measuring."""
    saved, _SMOKE[0] = _SMOKE[0], on
    try:
        yield
    finally:
        _SMOKE[0] = saved


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
