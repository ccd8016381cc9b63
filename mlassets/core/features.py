"""Feature preparation: build the joined frame of a data version and split it by time.

holdout = the newest ``holdout_days`` days, validation = the ``validation_days`` before, training =
older rows inside ``train_window_months``. Rows keep their raw columns: each model bundles its own
fitted preprocessing, so any model can score any version's rows.
"""

from __future__ import annotations

import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.sources import get_source

SPLITS = ("train", "validation", "holdout")


def feature_columns(cfg: PipelineConfig) -> list[str]:
    ds, feats = cfg.dataset, cfg.features
    cols = [*ds.key, *ds.slices, *feats.categorical, *feats.numeric, ds.target, ds.time_column]
    return list(dict.fromkeys(cols))


def split_by_time(frame: pd.DataFrame, cfg: PipelineConfig) -> pd.Series:
    """The split of each row: ``train``, ``validation``, ``holdout`` or ``""`` (outside the window)."""
    feats = cfg.features
    day = frame[cfg.dataset.time_column].dt.tz_convert(feats.timezone).dt.tz_localize(None).dt.normalize()
    last = day.max()
    holdout_start = last - pd.Timedelta(days=feats.holdout_days - 1)
    validation_start = holdout_start - pd.Timedelta(days=feats.validation_days)
    window_start = validation_start - pd.DateOffset(months=feats.train_window_months)
    split = pd.Series("", index=frame.index, dtype=object)
    split[day >= window_start] = "train"
    split[day >= validation_start] = "validation"
    split[day >= holdout_start] = "holdout"
    return split


def prepare_features(tables: dict[str, pd.DataFrame], cfg: PipelineConfig) -> dict[str, pd.DataFrame]:
    """The train / validation / holdout frames of a data version."""
    frame = get_source(cfg.dataset.source).build_frame(tables)
    missing = [c for c in feature_columns(cfg) if c not in frame.columns]
    if missing:
        raise ValueError(f"features: column {missing[0]!r} is not produced by source {cfg.dataset.source!r}")
    frame = frame[feature_columns(cfg)]
    split = split_by_time(frame, cfg)
    parts = {name: frame[split == name].reset_index(drop=True) for name in SPLITS}
    for name, part in parts.items():
        if part.empty:
            raise ValueError(f"features: the {name} split is empty (rows span too few days for the windows)")
    return parts
