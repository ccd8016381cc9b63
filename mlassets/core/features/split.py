"""Feature preparation: build the joined frame of each partition and split a version by time.

holdout = the newest ``holdout_days`` local days, validation = the ``validation_days`` before, training =
older rows inside ``train_window_months``. Rows keep their raw columns: each model bundles its own fitted
preprocessing, so any model can score any version's rows. A partition's frame depends only on that
partition's raw tables, so it can be cached; the split is global (it depends on the newest day).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlassets.core.config import PipelineConfig
from mlassets.core.data.days import local_days
from mlassets.core.data.sources import get_source

if TYPE_CHECKING:
    import pandas as pd

SPLITS = ("train", "validation", "holdout")
# Bump when build_frame, feature_columns or the day histogram change what a cached partition frame holds.
FEATURE_CODE_VERSION = "2"  # 2: optional time column, hash split, rows without a target dropped


def feature_columns(cfg: PipelineConfig) -> list[str]:
    ds, feats = cfg.dataset, cfg.features
    cols = [*ds.key, *ds.slices, *feats.categorical, *feats.numeric, ds.target, *([ds.time_column] or [])]
    return list(dict.fromkeys(c for c in cols if c))


@dataclass(frozen=True)
class SplitBounds:
    """First local day of each split: train >= ``train``, validation >= ``validation``, holdout >= ``holdout``."""

    train: pd.Timestamp
    validation: pd.Timestamp
    holdout: pd.Timestamp

    @classmethod
    def of(cls, last_day: pd.Timestamp, cfg: PipelineConfig) -> SplitBounds:
        import pandas as pd

        feats = cfg.features
        holdout = last_day - pd.Timedelta(days=feats.holdout_days - 1)
        validation = holdout - pd.Timedelta(days=feats.validation_days)
        return cls(validation - pd.DateOffset(months=feats.train_window_months), validation, holdout)

    def to_dict(self) -> dict[str, str]:
        return {name: getattr(self, name).date().isoformat() for name in SPLITS}

    @classmethod
    def from_dict(cls, data: Mapping[str, str]) -> SplitBounds:
        import pandas as pd

        return cls(**{name: pd.Timestamp(data[name]) for name in SPLITS})

    def assign(self, day: pd.Series) -> pd.Series:
        """The split of each local day: ``train``, ``validation``, ``holdout`` or ``""`` (outside the window)."""
        import pandas as pd

        split = pd.Series("", index=day.index, dtype=object)
        split[day >= self.train] = "train"
        split[day >= self.validation] = "validation"
        split[day >= self.holdout] = "holdout"
        return split


def split_by_time(frame: pd.DataFrame, cfg: PipelineConfig, bounds: SplitBounds | None = None) -> pd.Series:
    """The split of each row; the bounds follow from the frame's newest local day unless given."""
    day = local_days(frame[cfg.dataset.time_column], cfg.features.timezone)
    return (bounds or SplitBounds.of(day.max(), cfg)).assign(day)


def hash_split(cfg: PipelineConfig) -> dict[str, object]:
    """The hash split's parameters, as a manifest records them (a version is read back with its own)."""
    feats = cfg.features
    return {"method": "hash", "key": list(cfg.dataset.key), "validation": feats.validation_fraction,
            "holdout": feats.holdout_fraction, "seed": feats.split_seed}


def split_by_hash(frame: pd.DataFrame, params: Mapping[str, object]) -> pd.Series:
    """The split of each row from a stable hash of the key columns (and a seed): a row keeps its split in every
    version, so the holdout of champion and candidate is comparable, with no time column needed."""
    import pandas as pd

    canonical = pd.DataFrame({c: _canonical(frame[c]) for c in params["key"]}, index=frame.index)
    digest = pd.util.hash_pandas_object(canonical, index=False, hash_key=f"{int(params['seed']):016d}"[-16:])
    u = (digest.to_numpy() % 1_000_000) / 1_000_000
    holdout, validation = float(params["holdout"]), float(params["validation"])
    split = pd.Series("train", index=frame.index, dtype=object)
    split[u < holdout + validation] = "validation"
    split[u < holdout] = "holdout"
    return split


def _canonical(values: pd.Series) -> pd.Series:
    """A key column as text that does not depend on how the file typed it (12, 12.0 and "12" agree)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(values):
        return values.map(lambda v: format(v, ".15g"))
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        return values.dt.strftime("%Y-%m-%dT%H:%M:%S.%f%z")
    return values.astype(str).str.strip()


def split_rows(frame: pd.DataFrame, cfg: PipelineConfig, bounds: SplitBounds | None = None) -> pd.Series:
    """The split of each row, by time (``features.split: time``) or by hash of the key (``hash``)."""
    return split_by_hash(frame, hash_split(cfg)) if cfg.features.split == "hash" else split_by_time(frame, cfg, bounds)


def partition_frame(tables: Mapping[str, pd.DataFrame], cfg: PipelineConfig) -> pd.DataFrame:
    """The source's joined rows of some raw tables, reduced to the feature columns."""
    frame = get_source(cfg.dataset).build_frame(dict(tables))
    missing = [c for c in feature_columns(cfg) if c not in frame.columns]
    if missing:
        raise ValueError(f"features: column {missing[0]!r} is not produced by source {cfg.dataset.source!r}")
    return frame[feature_columns(cfg)]


def without_missing_target(frame: pd.DataFrame, cfg: PipelineConfig) -> tuple[pd.DataFrame, int]:
    """``(rows, dropped)``: rows without a target are dropped when ``dataset.drop_missing_target`` says so."""
    missing = frame[cfg.dataset.target].isna()
    if not cfg.dataset.drop_missing_target or not missing.any():
        return frame, 0
    return frame[~missing].reset_index(drop=True), int(missing.sum())


def day_histogram(frame: pd.DataFrame, cfg: PipelineConfig) -> dict[str, int]:
    """Rows per local day (ISO date): enough to count a cached frame's rows per split without reading it."""
    counts = local_days(frame[cfg.dataset.time_column], cfg.features.timezone).value_counts()
    return {day.date().isoformat(): int(n) for day, n in sorted(counts.items())}


def split_counts(histogram: Mapping[str, int], bounds: SplitBounds) -> dict[str, int]:
    """Rows per split of a day histogram (ISO dates compare like the days they name)."""
    first = bounds.to_dict()
    counts = dict.fromkeys(SPLITS, 0)
    for day, n in histogram.items():
        split = next((name for name in reversed(SPLITS) if day >= first[name]), "")
        if split:
            counts[split] += n
    return counts


def check_splits(rows: Mapping[str, int], method: str = "time") -> None:
    why = "rows span too few days for the windows" if method == "time" else "too few rows for the fractions"
    for name in SPLITS:
        if not rows.get(name):
            raise ValueError(f"features: the {name} split is empty ({why})")


def prepare_features(tables: dict[str, pd.DataFrame], cfg: PipelineConfig) -> dict[str, pd.DataFrame]:
    """The train / validation / holdout frames of a data version, from all its raw tables at once."""
    frame, _ = without_missing_target(partition_frame(tables, cfg), cfg)
    split = split_rows(frame, cfg)
    parts = {name: frame[split == name].reset_index(drop=True) for name in SPLITS}
    check_splits({name: len(part) for name, part in parts.items()}, cfg.features.split)
    return parts
