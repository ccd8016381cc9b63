"""Fault injection for demos and tests: a "broken data day" (one slice's training labels shifted, schema-valid)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.data.days import local_days


@dataclass(frozen=True)
class LabelCorruption:
    """A "broken data day": one slice's labels shifted in a partition's training rows (schema-valid)."""

    column: str
    value: str
    shift: float

    @classmethod
    def parse(cls, text: str, shift: float) -> LabelCorruption:
        """``"carrier=EV"`` -> LabelCorruption("carrier", "EV", shift)."""
        column, sep, value = text.partition("=")
        if not sep or not column or not value:
            raise ValueError(f"corrupt_slice: {text!r} is not of the form column=value")
        return cls(column.strip(), value.strip(), float(shift))


def corrupt_training_labels(
    frame: pd.DataFrame, cfg: PipelineConfig, corruption: LabelCorruption
) -> pd.DataFrame:
    """Shift the target of ``column == value`` rows older than the validation and holdout windows."""
    if corruption.column not in frame.columns:
        raise ValueError(f"corrupt_slice: column {corruption.column!r} is not in the table")
    frame = frame.copy()
    day = local_days(frame[cfg.dataset.time_column], cfg.features.timezone)
    cutoff = day.max() - pd.Timedelta(days=cfg.features.holdout_days + cfg.features.validation_days)
    rows = (frame[corruption.column].astype(str) == corruption.value) & (day <= cutoff)
    spec = cfg.dataset.columns[cfg.dataset.target]
    shifted = frame.loc[rows, cfg.dataset.target] + corruption.shift
    frame.loc[rows, cfg.dataset.target] = shifted.clip(lower=spec.min, upper=spec.max)
    return frame
