"""A ratio against an anchor measured in the same run, repeated in pairs until a confidence interval decides.

Each pair measures both sides back to back (so a busy spell of a shared machine falls on both) and gives one
ratio. The estimate is the geometric mean of the pairs' ratios; the interval is Student's t on their logs. After
``min_pairs``, pairs are added until the interval lies wholly on one side of the goal (``met`` or ``missed``), or
``max_pairs`` were measured (``undecided``: the goal is not shown met). The runner prints the interval with the
verdict. In smoke mode two pairs are measured and nothing is decided.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from bench.checks import expect_finite
from bench.registry import Better, smoke

CONFIDENCE = 0.95


def _t_quantile(q: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


@dataclass(frozen=True)
class Interval:
    """A ratio's estimate and its ``confidence`` interval, from ``len(ratios)`` pairs."""

    estimate: float
    low: float
    high: float
    ratios: tuple[float, ...]
    confidence: float = CONFIDENCE

    @classmethod
    def of(cls, ratios: list[float], confidence: float = CONFIDENCE) -> Interval:
        expect_finite(ratios, "pair ratios")
        logs = [math.log(r) for r in ratios]
        mean = statistics.fmean(logs)
        if len(logs) < 2:
            return cls(math.exp(mean), 0.0, math.inf, tuple(ratios), confidence)
        half = _t_quantile(0.5 + confidence / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        return cls(math.exp(mean), math.exp(mean - half), math.exp(mean + half), tuple(ratios), confidence)

    def verdict(self, target: float, better: Better) -> str:
        """``met`` (the whole interval on the goal's side), ``missed`` (the whole interval on the other side) or
        ``undecided``."""
        good, bad = (self.high <= target, self.low > target) if better == "lower" else \
            (self.low >= target, self.high < target)
        return "met" if good else "missed" if bad else "undecided"

    def text(self) -> str:
        return f"{self.confidence:.0%} CI [{self.low:.3g}, {self.high:.3g}] over {len(self.ratios)} pairs"


def decide(pair: Callable[[int], float], target: float, better: Better, min_pairs: int = 3,
           max_pairs: int = 10) -> Interval:
    """Call ``pair(i)`` (one ratio from one back-to-back measurement of both sides) until the interval decides
    against ``target`` or ``max_pairs`` ratios were measured. In smoke mode: two pairs, whatever they show."""
    if smoke():
        min_pairs = max_pairs = 2
    ratios: list[float] = []
    while len(ratios) < max_pairs:
        ratios.append(pair(len(ratios)))
        interval = Interval.of(ratios)
        if len(ratios) >= min_pairs and interval.verdict(target, better) != "undecided":
            break
    return interval
