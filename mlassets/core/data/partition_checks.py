"""Blocking count and distribution checks: a version's new partitions against its other partitions.

"New" partitions are those a version adds or changes compared with its parent; the reference is every other
partition of the version (the data the previous version already held), read from the per-partition summaries
written at ingestion (``summary``). Bands come from the dataset config.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from mlassets.core.config import DatasetConfig
from mlassets.core.data.bands import QUARTILES, mean_shift, quartile_shifts, row_band, target_band
from mlassets.core.data.outcome import CheckOutcome
from mlassets.core.data.summary import TargetStats


def _names(keys: Collection[str]) -> str:
    keys = sorted(keys)
    return f"partition {keys[0]}" if len(keys) == 1 else f"partitions {', '.join(keys)}"


def validate_row_change(counts: Mapping[str, int], new: Collection[str], cfg: DatasetConfig,
                        days: Mapping[str, int] | None = None) -> CheckOutcome:
    """Rows of each new partition within ``row_change_band`` of the mean of the other partitions (see ``row_band``):
    rows per calendar day when ``days`` holds every partition's days (a file of nine years against one of a year),
    else rows."""
    import numpy as np

    keys = [k for k in counts if k not in new]
    if not keys or not new:
        return CheckOutcome("row_change", True, "no other partitions to compare the row counts with")
    per_day = bool(days) and all(days.get(k, 0) > 0 for k in [*keys, *new])
    rate = {k: counts.get(k, 0) / days[k] if per_day else float(counts.get(k, 0)) for k in [*keys, *new]}
    unit = "rows a day" if per_day else "rows"
    reference = [rate[k] for k in keys]
    band, how = row_band(cfg.row_change_band, reference)
    mean = float(np.mean(reference))
    said = f" ({how})" if how else ""
    if math.isinf(band):
        amount = _amount(counts, days, new, per_day)
        return CheckOutcome("row_change", True, f"{_names(new)}: {amount} vs {mean:.4g} {unit} in the one earlier "
                                                f"partition{said}")
    bad = []
    for key in sorted(new):
        change = rate[key] / mean - 1 if mean else 0.0
        if abs(change) > band:
            others = f"{len(reference)} other partition{'s' if len(reference) > 1 else ''}"
            bad.append(f"partition {key}: {_amount(counts, days, [key], per_day)}, {change:+.0%} vs the mean "
                       f"{mean:.4g} {unit} of {others} (band ±{band:.0%})")
    if bad:
        return CheckOutcome("row_change", False, "; ".join(bad) + said, len(bad))
    return CheckOutcome("row_change", True, f"{_names(new)} within ±{band:.0%} of the mean {mean:.4g} {unit}{said}")


def _amount(counts: Mapping[str, int], days: Mapping[str, int] | None, keys: Collection[str], per_day: bool) -> str:
    if not per_day:
        return ", ".join(f"{counts.get(k, 0)} rows" for k in sorted(keys))
    return ", ".join(f"{counts.get(k, 0)} rows over {days[k]} days ({counts.get(k, 0) / days[k]:.4g} a day)"
                     for k in sorted(keys))


Values = TargetStats | pd.Series | None  # a partition's summary, or raw values (tests, small inputs)


def _stats(values: Values) -> TargetStats:
    return values if isinstance(values, TargetStats) else TargetStats.of_values(values)


def _unchecked(name: str, new: TargetStats, reference: TargetStats, keys: Collection[str]) -> CheckOutcome | None:
    if not new.count or not keys:
        return CheckOutcome(name, True, "no new target values to compare (the schema and row checks judge them)")
    if reference.count < 2:
        return CheckOutcome(name, True, "no earlier target values to compare with")
    return None


def validate_target_mean(new: Values, reference: Values, keys: Collection[str], cfg: DatasetConfig,
                         seen: Sequence[TargetStats] = ()) -> CheckOutcome:
    """|mean(new) - mean(reference)| <= ``target_mean_band`` reference standard deviations (unset: derived from
    the reference partitions ``seen``, see ``bands.target_band``)."""
    if cfg.task == "multiclass":
        return CheckOutcome("target_mean", True, "multiclass target: class labels have no mean (drift compares the "
                                                 "class shares)")
    new, reference = _stats(new), _stats(reference)
    skipped = _unchecked("target_mean", new, reference, keys)
    if skipped:
        return skipped
    shift = mean_shift(new, reference)
    band, how = target_band(cfg.target_mean_band, "target_mean_band", seen, mean_shift, "std")
    if math.isinf(band):
        return CheckOutcome("target_mean", True, f"column {cfg.target!r}: mean {new.mean:.4g} in {_names(keys)} vs "
                                                 f"{reference.mean:.4g} ({shift:+.2f} std; {how})")
    text = (f"column {cfg.target!r}: mean {new.mean:.4g} in {_names(keys)} vs {reference.mean:.4g} in the "
            f"others, a shift of {shift:+.2f} std (band ±{band:.2g}{f'; {how}' if how else ''})")
    return CheckOutcome("target_mean", abs(shift) <= band, text, int(abs(shift) > band))


def validate_target_quantiles(
    new: Values, reference: Values, keys: Collection[str], cfg: DatasetConfig, seen: Sequence[TargetStats] = (),
) -> CheckOutcome:
    """Quartiles of the new rows within ``target_quantile_band`` reference IQRs of the reference quartiles (unset:
    derived from the reference partitions ``seen``, see ``bands.target_band``)."""
    new, reference = _stats(new), _stats(reference)
    if cfg.task in ("binary", "multiclass"):
        return _classes(new, reference, cfg)
    skipped = _unchecked("target_quantiles", new, reference, keys)
    if skipped:
        return skipped
    ref_q = {n: reference.quantile(q) for n, q in QUARTILES.items()}
    new_q = {n: new.quantile(q) for n, q in QUARTILES.items()}
    shifts = quartile_shifts(new, reference)
    band, how = target_band(cfg.target_quantile_band, "target_quantile_band", seen,
                            lambda a, b: max(map(abs, quartile_shifts(a, b).values())), "IQR")
    said = f"; {how}" if how else ""
    if math.isinf(band):
        worst = max(shifts.values(), key=abs)
        return CheckOutcome("target_quantiles", True, f"column {cfg.target!r}: quartiles {worst:+.2f} IQR from the "
                                                      f"earlier partition's{said}")
    bad = [f"{n} {new_q[n]:.4g} vs {ref_q[n]:.4g} ({shifts[n]:+.2f} IQR)" for n in QUARTILES if abs(shifts[n]) > band]
    if bad:
        text = f"column {cfg.target!r} in {_names(keys)}: {', '.join(bad)}; band ±{band:.2g} IQR{said}"
        return CheckOutcome("target_quantiles", False, text, len(bad))
    worst = max(shifts.values(), key=abs)
    return CheckOutcome("target_quantiles", True, f"column {cfg.target!r}: quartiles within {worst:+.2f} IQR "
                                                  f"of the others (band ±{band:.2g}{said})")


def _classes(new: TargetStats, reference: TargetStats, cfg: DatasetConfig) -> CheckOutcome:
    """A classification target's quartiles say nothing; what fails a version is a target with one class in all
    of it (a classifier learns nothing from it, and its training would fail far later, less clearly)."""
    every = TargetStats.merge([new, reference])
    what = "binary target: quartiles say nothing; the mean check judges it" if cfg.task == "binary" else \
        "multiclass target: class labels have no quartiles"
    if every.count and every.quantile(0.0) == every.quantile(1.0):
        return CheckOutcome("target_quantiles", False, f"column {cfg.target!r}: every one of the version's "
                            f"{every.count} rows has the class {every.quantile(0.0):g}: one class, and a {cfg.task} "
                            "classifier needs at least two", 1)
    return CheckOutcome("target_quantiles", True, f"{what}; the version holds more than one class")
