"""Raw data in the versioned store: ingest a month as one commit, read any version back.

Layout of a dataset's repository (branch ``main`` is the watched branch; only ingestion writes it):
``raw/<table>/<YYYY-MM>.parquet``. Derived artifacts go to the ``<name>-derived`` repository.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.sources import get_source
from mlassets.core.store import Commit, VersionedStore

WATCHED_BRANCH = "main"


def raw_repo(cfg: PipelineConfig) -> str:
    return cfg.dataset.name.replace("_", "-")


def derived_repo(cfg: PipelineConfig) -> str:
    return f"{raw_repo(cfg)}-derived"


def to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def from_parquet_bytes(blob: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(blob))


@dataclass(frozen=True)
class LabelCorruption:
    """A "broken data day": one slice's labels shifted in a month's training rows (schema-valid)."""

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
    last_day = int(frame["day"].max())
    cutoff = last_day - cfg.features.holdout_days - cfg.features.validation_days
    rows = (frame[corruption.column].astype(str) == corruption.value) & (frame["day"] <= cutoff)
    spec = cfg.dataset.columns[cfg.dataset.target]
    shifted = frame.loc[rows, cfg.dataset.target] + corruption.shift
    frame.loc[rows, cfg.dataset.target] = shifted.clip(lower=spec.min, upper=spec.max)
    return frame


def month_tables(cfg: PipelineConfig, month: str) -> dict[str, pd.DataFrame]:
    return get_source(cfg.dataset.source).load_month(month, cfg.dataset.sample_fraction)


def ingest_month(
    store: VersionedStore,
    cfg: PipelineConfig,
    month: str,
    tables: Mapping[str, pd.DataFrame] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> Commit:
    """Commit one month's raw tables to the watched branch as one atomic commit."""
    if month not in cfg.dataset.months:
        raise ValueError(f"month {month!r} is not in dataset.months of {cfg.dataset.name!r}")
    tables = month_tables(cfg, month) if tables is None else tables
    repo = raw_repo(cfg)
    store.create_repo(repo, default_branch=WATCHED_BRANCH)
    changes = {f"raw/{name}/{month}.parquet": to_parquet_bytes(df) for name, df in tables.items()}
    meta = {"month": month, "rows": str(sum(len(df) for df in tables.values())), **(metadata or {})}
    return store.commit(repo, WATCHED_BRANCH, changes, f"Ingest {cfg.dataset.name} {month}", meta)


def version_months(store: VersionedStore, cfg: PipelineConfig, commit: str) -> list[str]:
    """The months a data version holds, oldest first."""
    paths = store.list_objects(raw_repo(cfg), commit, prefix="raw/")
    return sorted({p.rsplit("/", 1)[-1].removesuffix(".parquet") for p in paths})


def read_table(store: VersionedStore, cfg: PipelineConfig, commit: str, table: str) -> pd.DataFrame:
    """One raw table of a data version, all its months concatenated."""
    repo = raw_repo(cfg)
    paths = store.list_objects(repo, commit, prefix=f"raw/{table}/")
    if not paths:
        raise ValueError(f"data version {commit}: no {table!r} table in repository {repo!r}")
    return pd.concat([from_parquet_bytes(store.read(repo, commit, p)) for p in paths], ignore_index=True)


def read_version(store: VersionedStore, cfg: PipelineConfig, commit: str) -> dict[str, pd.DataFrame]:
    repo = raw_repo(cfg)
    tables = sorted({p.split("/")[1] for p in store.list_objects(repo, commit, prefix="raw/")})
    return {t: read_table(store, cfg, commit, t) for t in tables}
