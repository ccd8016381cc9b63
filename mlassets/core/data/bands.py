"""Validation bands derived from the partitions a version already holds, where the dataset config leaves them out.

* ``row_change_band``: ``SPREAD`` times the largest deviation of one seen partition's rows from the mean of the
  others, at least ``MIN_BAND``;
* ``target_mean_band`` / ``target_quantile_band``: ``SPREAD`` times the largest shift of one seen partition's
  target (mean in standard deviations, quartiles in IQRs) from the others (the newest ``SEEN`` of them), at least
  ``MIN_BAND``: a target that trends (prices that rise every year) widens its own band as the history shows it.

With fewer than two partitions seen nothing can be read: the band is ``FIRST_SIGHT`` (infinite), so a table's
second file is never refused on first sight; the check says so. Each returns ``(band, how)``, ``how`` the
sentence the check's message carries ("" when the config set the band). Rows are compared per calendar day of the
time column where the summaries hold it (a first file of nine years against a file of one is like with like).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mlassets.core.data.summary import TargetStats

MIN_BAND, SPREAD, SEEN = 0.5, 2.0, 24
FIRST_SIGHT = math.inf  # one earlier partition: no band can be derived, nothing is refused
QUARTILES = {"q25": 0.25, "median": 0.5, "q75": 0.75}


def mean_shift(new: TargetStats, reference: TargetStats) -> float:
    """(mean(new) - mean(reference)) in reference standard deviations."""
    scale = reference.std if reference.std > 0 else max(abs(reference.mean), 1.0)
    return (new.mean - reference.mean) / scale


def quartile_shifts(new: TargetStats, reference: TargetStats) -> dict[str, float]:
    """Each quartile of ``new`` minus the reference's, in reference IQRs."""
    ref_q = {n: reference.quantile(q) for n, q in QUARTILES.items()}
    iqr = ref_q["q75"] - ref_q["q25"]
    scale = iqr if iqr > 0 else (reference.std or 1.0)
    return {n: (new.quantile(q) - ref_q[n]) / scale for n, q in QUARTILES.items()}


def row_band(configured: float | None, reference: Sequence[float]) -> tuple[float, str]:
    """The rows band: as configured, or derived from the row counts of the partitions seen."""
    import numpy as np

    if configured is not None:
        return configured, ""
    counts = np.asarray(reference, dtype=np.float64)
    if counts.size < 2:
        return FIRST_SIGHT, ("derived: not judged on first sight, one earlier partition gives no band (from two on: "
                             f"{SPREAD:g}x their spread, at least ±{MIN_BAND:.0%}); dataset.row_change_band sets it")
    others = (counts.sum() - counts) / (counts.size - 1)
    spread = float(np.max(np.abs(counts / np.where(others > 0, others, 1) - 1)))
    return max(MIN_BAND, SPREAD * spread), (
        f"derived: {SPREAD:g}x the ±{spread:.0%} the {counts.size} partitions seen differ by, at least "
        f"±{MIN_BAND:.0%}; dataset.row_change_band sets it")


def target_band(configured: float | None, key: str, seen: Sequence[TargetStats],
                shift: Callable[[TargetStats, TargetStats], float], unit: str) -> tuple[float, str]:
    """A target band: as configured, or ``SPREAD`` times the largest ``shift`` of one seen partition from the rest."""
    if configured is not None:
        return configured, ""
    parts = [s for s in seen if s.count][-SEEN:]
    if len(parts) < 2:
        return FIRST_SIGHT, ("derived: not judged on first sight, one earlier partition gives no band (from two on: "
                             f"{SPREAD:g}x their spread, at least ±{MIN_BAND:g} {unit}); dataset.{key} sets it")
    worst = max(abs(shift(p, TargetStats.merge(parts[:i] + parts[i + 1:]))) for i, p in enumerate(parts))
    return max(MIN_BAND, SPREAD * worst), (
        f"derived: {SPREAD:g}x the ±{worst:.2f} {unit} the {len(parts)} partitions seen differ by, at least "
        f"±{MIN_BAND:g}; dataset.{key} sets it")
