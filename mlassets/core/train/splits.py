"""The training and validation splits as arrays every model family trains on (no torch here).

Both splits are read (only the needed columns), rows without a target are dropped, the preprocessing is fitted on
the training rows, and the target is made ready for the task: regression standardized by the training median and
standard deviation; binary checked to be 0/1; multiclass encoded as indices into the training split's classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from mlassets.core.config import PipelineConfig
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.feature_spec import FeatureSpec, output_size
from mlassets.core.train.reporting import Reporter


@dataclass
class Splits:
    """Fitted preprocessing and both splits as arrays; ``y`` is what the loss sees, ``y_val`` what the validation
    metric compares with (target units, 0/1, or class indices)."""

    pre: Preprocessor
    x_cat: np.ndarray  # int64 [n, n_cat]
    x_num: np.ndarray  # float32 [n, n_num]
    y: np.ndarray  # float32 standardized (regression), float32 0/1 (binary), int64 class index (multiclass)
    val_cat: np.ndarray
    val_num: np.ndarray
    y_val: np.ndarray  # float64 target units or 0/1; int64 class index
    task: str
    center: float = 0.0
    scale: float = 1.0
    classes: list[str] = field(default_factory=list)
    params: dict = field(default_factory=dict)

    @property
    def n_train(self) -> int:
        return len(self.y)

    @property
    def n_val(self) -> int:
        return len(self.y_val)

    @property
    def spec(self) -> FeatureSpec:
        return FeatureSpec(self.pre.cardinalities, len(self.pre.numeric), output_size(self.task, self.classes),
                           self.task, dict(self.params))


def check_split(path: str, columns: list[str], what: str) -> None:
    """The split's file exists and has every needed column (the first it lacks is named)."""
    if not Path(path).is_file():
        raise ValueError(f"{what} data {path!r} does not exist")
    have = set(pq.read_schema(path).names)
    for column in columns:
        if column not in have:
            raise ValueError(f"{what} data {path}: missing column {column!r}")


def _read(path: str, columns: list[str], what: str) -> pd.DataFrame:
    """Read only the needed columns, naming any that the file lacks."""
    check_split(path, columns, what)
    return pd.read_parquet(path, columns=columns)


def class_label(value: object) -> str:
    """A class as the model names it: integral floats (2.0) read as ints ("2"), everything else as text."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def read_splits(cfg: PipelineConfig, train_path: str, validation_path: str, reporter: Reporter | None) -> Splits:
    """Read both splits, drop rows without a target, fit the preprocessing on the training rows."""
    feats, target, task = cfg.features, cfg.dataset.target, cfg.dataset.task
    columns = list(dict.fromkeys([*feats.categorical, *feats.numeric, target]))
    frames = {}
    for what, path in (("training", train_path), ("validation", validation_path)):
        df = _read(path, columns, what)
        missing = int(df[target].isna().sum())
        if missing and reporter is not None:
            reporter.log(f"{what}: dropping {missing} rows without a {target!r} value")
        if len(df) - missing == 0:
            raise ValueError(f"{what} data is empty: no rows with a {target!r} value")
        frames[what] = df[df[target].notna()].reset_index(drop=True)
    train_df, val_df = frames["training"], frames["validation"]
    pre = Preprocessor.fit(train_df, feats.categorical, feats.numeric)
    xc, xn = pre.transform(train_df)
    vc, vn = pre.transform(val_df)
    out = Splits(pre, xc, xn, np.empty(0, np.float32), vc, vn, np.empty(0), task, params=dict(cfg.model.params))
    if task == "multiclass":
        labels = {what: df[target].map(class_label) for what, df in frames.items()}
        out.classes = sorted(set(labels["training"]))
        if len(out.classes) < 2:
            raise ValueError(f"dataset.target {target!r} of a multiclass task has {len(out.classes)} class in the "
                             "training split; it needs at least 2")
        index = {c: i for i, c in enumerate(out.classes)}
        out.y = labels["training"].map(index).to_numpy(dtype=np.int64)
        known = labels["validation"].isin(index).to_numpy()
        if not known.all():  # a class the model cannot predict would make the validation metric infinite
            if reporter is not None:
                reporter.log(f"validation: dropping {int((~known).sum())} rows of classes the training split never "
                             f"holds ({', '.join(sorted(set(labels['validation'][~known])))})")
            if not known.any():
                raise ValueError("validation data is empty: no row has a class the training split holds")
            out.val_cat, out.val_num = vc[known], vn[known]
        out.y_val = labels["validation"][known].map(index).to_numpy(dtype=np.int64)
        return out
    y_train = train_df[target].to_numpy(dtype=np.float64)
    out.y_val = val_df[target].to_numpy(dtype=np.float64)
    if task == "binary":  # the model gives logits of P(target = 1): no standardizing
        check_binary(y_train, target, "training")
        check_binary(out.y_val, target, "validation")
    else:
        out.center, out.scale = target_scaling(y_train)
    out.y = ((y_train - out.center) / out.scale).astype(np.float32)
    return out


def target_scaling(y: np.ndarray) -> tuple[float, float]:
    """A regression target's center and scale from all its training values at once: the median and the standard
    deviation (1 where that is 0 or not finite)."""
    scale = float(np.std(y))
    return float(np.median(y)), scale if np.isfinite(scale) and scale > 0 else 1.0


def check_binary(y: np.ndarray, target: str, what: str, offset: int = 0) -> None:
    """``y`` holds 0 and 1 only; rows are numbered among the split's rows with a target from ``offset``."""
    bad = np.flatnonzero((y != 0) & (y != 1))
    if len(bad):
        row = offset + int(bad[0])
        raise ValueError(f"dataset.target {target!r} of a binary task must be 0 or 1: {what} row {row} "
                         f"has {float(y[bad[0]])!r} ({len(bad)} such rows)")
