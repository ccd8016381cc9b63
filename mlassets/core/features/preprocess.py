"""Feature preprocessing fitted on training rows: categorical vocabularies and numeric standardization.

The fitted state is plain JSON (``to_dict``/``from_dict``) so it can ship inside the model artifact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

UNKNOWN = 0  # index for unseen or missing categories; real values start at 1
FEW_ROWS = 64  # up to this many rows (a served request), values are looked up one by one: no factorize's set-up


def category_key(value: Any) -> str:
    """The string a categorical value is compared as; integral floats (5.0) read as ints ("5")."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


Columns: TypeAlias = pd.DataFrame | Mapping[str, np.ndarray]  # a frame, or its columns as arrays (a served batch's)
Factorized: TypeAlias = tuple[np.ndarray, Any]  # a column's (codes, distinct values): see ``factorize_columns``


def factorize_columns(df: Columns, columns: Iterable[str]) -> dict[str, Factorized]:
    """Each column's ``pd.factorize(sort=True)``: per row the index of its value among the sorted distinct values
    (missing: -1). Factorizing a million strings is most of ``Preprocessor.transform``'s work; two models scoring one
    frame, and the slice columns beside them, share it (``transform(df, factorized)``). Values that do not sort
    (a column mixing types no order compares) keep the order they first appear in."""
    return {column: _factorized(df[column]) for column in dict.fromkeys(columns)}


def _factorized(series: pd.Series | np.ndarray) -> Factorized:
    try:
        return pd.factorize(series, sort=True, use_na_sentinel=True)
    except TypeError:
        return pd.factorize(series, use_na_sentinel=True)


def _codes(series: pd.Series | np.ndarray, vocab: dict[str, int], factorized: Factorized | None = None) -> np.ndarray:
    """Vocabulary indices for a column: factorize once, look up each distinct value once (a few rows: each value)."""
    if factorized is None and len(series) <= FEW_ROWS:
        return np.array([UNKNOWN if pd.isna(v) else vocab.get(category_key(v), UNKNOWN) for v in series.tolist()],
                        dtype=np.int64)
    codes, uniques = factorized if factorized is not None else pd.factorize(series, use_na_sentinel=True)
    table = np.array([vocab.get(category_key(u), UNKNOWN) for u in uniques] + [UNKNOWN], dtype=np.int64)
    return table[codes]  # NaN/None have code -1, which picks the trailing UNKNOWN


def numeric_values(series: pd.Series | np.ndarray, column: str) -> np.ndarray:
    """A column as float64 with non-finite values turned into NaN."""
    try:
        typed = series if series.dtype.kind in "fiu" else pd.to_numeric(series)  # numbers already: as they are
        values = typed.to_numpy(dtype=np.float64, na_value=np.nan) if isinstance(typed, pd.Series) \
            else np.asarray(typed, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"numeric column {column!r} holds non-numeric values: {exc}") from exc
    return np.where(np.isfinite(values), values, np.nan)


def _require(df: Columns, columns: list[str]) -> None:
    have = df.columns if isinstance(df, pd.DataFrame) else df.keys()
    for column in columns:
        if column not in have:
            raise ValueError(f"missing column {column!r} (have: {', '.join(map(str, have))})")


@dataclass
class Preprocessor:
    """Maps raw feature columns to (category indices, standardized numerics); fitted state is JSON."""

    categorical: list[str]
    numeric: list[str]
    vocab: dict[str, dict[str, int]] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    stds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def fit(cls, df: pd.DataFrame, categorical: list[str], numeric: list[str]) -> Preprocessor:
        """Learn sorted vocabularies and mean/std per numeric column from ``df`` (training rows only)."""
        _require(df, [*categorical, *numeric])
        vocab: dict[str, dict[str, int]] = {}
        for column in categorical:
            _, uniques = pd.factorize(df[column], use_na_sentinel=True)
            keys = sorted({category_key(u) for u in uniques})
            vocab[column] = {key: i + 1 for i, key in enumerate(keys)}
        means: dict[str, float] = {}
        stds: dict[str, float] = {}
        for column in numeric:
            values = numeric_values(df[column], column)
            finite = values[~np.isnan(values)]
            mean = float(finite.mean()) if finite.size else 0.0
            std = float(finite.std()) if finite.size else 1.0
            means[column] = mean
            stds[column] = std if math.isfinite(std) and std > 0 else 1.0
        return cls(list(categorical), list(numeric), vocab, means, stds)

    @property
    def cardinalities(self) -> list[int]:
        """Embedding table sizes: vocabulary size + 1 for the unknown index."""
        return [len(self.vocab[c]) + 1 for c in self.categorical]

    def transform(self, df: Columns,
                  factorized: Mapping[str, Factorized] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(int64 [n, n_cat] category codes, float32 [n, n_num] standardized numerics)``; unseen or missing
        categories map to 0, missing numerics to the training mean (0 once standardized). ``df``: a frame, or its
        columns as arrays of one length (the endpoint's batch: no frame built for a few rows). ``factorized``: some
        of ``df``'s columns already factorized (``factorize_columns``), read instead of factorizing them again."""
        columns = [*self.categorical, *self.numeric]
        _require(df, columns)
        n = len(df) if isinstance(df, pd.DataFrame) else len(df[columns[0]]) if columns else 0
        cat = np.zeros((n, len(self.categorical)), dtype=np.int64)
        for j, column in enumerate(self.categorical):
            cat[:, j] = _codes(df[column], self.vocab[column], (factorized or {}).get(column))
        num = np.zeros((n, len(self.numeric)), dtype=np.float32)
        for j, column in enumerate(self.numeric):
            values = numeric_values(df[column], column)
            mean = self.means[column]
            values = np.where(np.isnan(values), mean, values)
            num[:, j] = (values - mean) / self.stds[column]
        return cat, num

    def to_dict(self) -> dict[str, Any]:
        return {
            "categorical": list(self.categorical),
            "numeric": list(self.numeric),
            "vocab": {c: dict(v) for c, v in self.vocab.items()},
            "means": {c: float(v) for c, v in self.means.items()},
            "stds": {c: float(v) for c, v in self.stds.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Preprocessor:
        """Rebuild from ``to_dict`` output, checking every declared column has its fitted state."""
        try:
            pre = cls(
                categorical=[str(c) for c in data["categorical"]],
                numeric=[str(c) for c in data["numeric"]],
                vocab={str(c): {str(k): int(i) for k, i in v.items()} for c, v in data["vocab"].items()},
                means={str(c): float(v) for c, v in data["means"].items()},
                stds={str(c): float(v) for c, v in data["stds"].items()},
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"invalid preprocessor state: {exc!r}") from exc
        for column in pre.categorical:
            if column not in pre.vocab:
                raise ValueError(f"invalid preprocessor state: no vocabulary for {column!r}")
        for column in pre.numeric:
            if column not in pre.means or column not in pre.stds:
                raise ValueError(f"invalid preprocessor state: no mean/std for {column!r}")
        return pre
