"""Always-valid confidence sequences for a difference of means: a rule may look after every new row and still err
at most ``alpha`` over all its looks together.

The boundary is the normal mixture (Robbins 1970; Howard, Ramdas, McAuliffe, Sekhon 2021, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49(2)), used with a plug-in variance as the
asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy, Ramdas, "Time-uniform central limit theory
and asymptotic confidence sequences" (arXiv:2103.06476): at every ``n`` at once,

    estimate ± se_n · c(n),   c(n) = sqrt( 2 (n ρ² + 1) / (n ρ²) · ln( sqrt(n ρ² + 1) / α ) ),
    ρ² = (-2 ln α + ln(1 - 2 ln α)) / n*

covers the true difference with probability at least ``1 - α`` (asymptotically in the variance estimate), where
``se_n`` is the estimate's standard error and ``n*`` the planned rows, at which the sequence is tightest. The
difference is ``D = s · (mean(candidate) - k · mean(champion))`` (``s = -1`` flips a higher-is-better metric so that
``D > 0`` is always "worse than ``k`` allows"):

* ``paired``: both variants scored the same rows (a shadow): ``se² = var(c_i - k h_i) / n`` over the pairs;
* ``two_sample``: each variant scored its own rows (a canary's split traffic), Welch's
  ``se² = var(c) / n_c + k² var(h) / n_h`` and ``n = min(n_c, n_h)``.

Everything is computed from sums (``Sums``, ``PairSums``), so callers keep five numbers, not the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

POWER = 0.95  # the power of the detectable-effect statement


@dataclass(frozen=True)
class Sums:
    """One variant's rows: count, sum and sum of squares."""

    n: int
    total: float
    squares: float

    @classmethod
    def of(cls, values: np.ndarray) -> Sums:
        v = np.asarray(values, dtype=np.float64)
        return cls(int(v.size), float(v.sum()), float((v * v).sum()))

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def var(self) -> float:
        """Sample variance (NaN under two rows)."""
        if self.n < 2:
            return math.nan
        return max(0.0, (self.squares - self.total * self.total / self.n) / (self.n - 1))


@dataclass(frozen=True)
class PairSums:
    """Pairs ``(c_i, h_i)`` scored on the same rows: count, sums, sums of squares and of products."""

    n: int
    c: float
    h: float
    cc: float
    hh: float
    ch: float

    @classmethod
    def of(cls, c: np.ndarray, h: np.ndarray) -> PairSums:
        c, h = np.asarray(c, dtype=np.float64), np.asarray(h, dtype=np.float64)
        return cls(int(c.size), float(c.sum()), float(h.sum()), float((c * c).sum()), float((h * h).sum()),
                   float((c * h).sum()))


@dataclass(frozen=True)
class Interval:
    """An always-valid interval on ``D`` (see the module docstring) after ``n`` rows."""

    estimate: float
    low: float
    high: float
    se: float
    n: int
    base: float  # the champion's mean, the scale a relative change is read on

    @property
    def worse(self) -> bool:
        """The whole interval says "worse than allowed" (``D > 0``)."""
        return self.low > 0


def multiplier(n: float, planned: int, alpha: float) -> float:
    """``c(n)``: the interval's half-width in standard errors after ``n`` rows, tightest at ``planned``."""
    rho2 = (-2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))) / max(planned, 1)
    nr = n * rho2
    return math.sqrt(2 * (nr + 1) / nr * math.log(math.sqrt(nr + 1) / alpha))


def paired(p: PairSums, k: float, sign: float, planned: int, alpha: float) -> Interval | None:
    """The interval on ``sign · mean(c - k h)`` over the pairs; None under two pairs."""
    if p.n < 2:
        return None
    mean = (p.c - k * p.h) / p.n
    squares = p.cc - 2 * k * p.ch + k * k * p.hh
    var = max(0.0, (squares - p.n * mean * mean) / (p.n - 1))
    return _interval(sign * mean, math.sqrt(var / p.n), p.n, planned, alpha, p.h / p.n)


def two_sample(c: Sums, h: Sums, k: float, sign: float, planned: int, alpha: float) -> Interval | None:
    """The interval on ``sign · (mean(c) - k mean(h))`` of two independent samples; None under two rows of either."""
    if min(c.n, h.n) < 2:
        return None
    se = math.sqrt(c.var / c.n + k * k * h.var / h.n)
    return _interval(sign * (c.mean - k * h.mean), se, min(c.n, h.n), planned, alpha, h.mean)


def _interval(estimate: float, se: float, n: int, planned: int, alpha: float, base: float) -> Interval:
    half = se * multiplier(n, planned, alpha)
    return Interval(estimate, estimate - half, estimate + half, se, n, base)


def detectable(found: Interval, planned: int, alpha: float, power: float = POWER) -> float:
    """How far above the allowed ``D = 0`` the true ``D`` must be for the interval at ``planned`` rows to lie above 0
    with probability ``power``: ``se_planned · (c(planned) + z_power)``, the standard error scaled from what was
    seen (``se_n · sqrt(n / planned)``)."""
    se = found.se * math.sqrt(found.n / max(planned, 1))
    return se * (multiplier(planned, planned, alpha) + NormalDist().inv_cdf(power))


def shares_distance_low(champion: dict[str, float], candidate: dict[str, float], n_h: int, n_c: int, planned: int,
                        alpha: float) -> float:
    """An always-valid lower bound on half the L1 distance of two label-share vectors: each class's share
    difference gets a two-sample interval at ``alpha / classes`` (Bonferroni), and the bound sums
    ``max(0, |difference| - half-width) / 2``."""
    labels = sorted(set(champion) | set(candidate))
    if min(n_h, n_c) < 2 or not labels:
        return 0.0
    each = alpha / len(labels)
    total = 0.0
    for label in labels:
        ph, pc = champion.get(label, 0.0), candidate.get(label, 0.0)
        h, c = Sums(n_h, ph * n_h, ph * n_h), Sums(n_c, pc * n_c, pc * n_c)  # 0/1 rows: squares == sum
        found = two_sample(c, h, 1.0, 1.0, planned, each)
        assert found is not None
        total += max(0.0, abs(found.estimate) - (found.high - found.estimate))
    return total / 2
