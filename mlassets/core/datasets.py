"""Raw data in the versioned store: the layout of a dataset's repository and reads of any version.

Layout (branch ``main`` is the watched branch; only ingestion writes it, see ``ingest``):
``raw/<table>/<partition>.parquet``, one object per table and partition (a month, a week).
Derived artifacts go to the ``<name>-derived`` repository.
"""

from __future__ import annotations

import io
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from mlassets.core.config import PipelineConfig
from mlassets.core.features import local_days
from mlassets.core.sources import get_source
from mlassets.core.store import VersionedStore

WATCHED_BRANCH = "main"


def raw_repo(cfg: PipelineConfig) -> str:
    return cfg.dataset.name.replace("_", "-")


def derived_repo(cfg: PipelineConfig) -> str:
    return f"{raw_repo(cfg)}-derived"


def main_table(cfg: PipelineConfig) -> str:
    """The table whose rows are the examples (the source's ``MAIN_TABLE``, e.g. ``flights``)."""
    return get_source(cfg.dataset.source).MAIN_TABLE


def to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def from_parquet_bytes(blob: bytes, columns: list[str] | None = None) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(blob), columns=columns)


def parquet_rows(blob: bytes) -> int:
    """Rows of a parquet object, from its footer alone."""
    return pq.ParquetFile(io.BytesIO(blob)).metadata.num_rows


def raw_path(table: str, partition: str) -> str:
    return f"raw/{table}/{partition}.parquet"


def partition_objects(store: VersionedStore, cfg: PipelineConfig, ref: str) -> dict[str, dict[str, str]]:
    """Partition key -> {table: object path} at ``ref``, partitions in order."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for path in store.list_objects(raw_repo(cfg), ref, prefix="raw/"):
        _, table, name = path.split("/", 2)
        out[name.removesuffix(".parquet")][table] = path
    return dict(sorted(out.items()))


def changed_partitions(store: VersionedStore, cfg: PipelineConfig, ref: str, parent: str) -> list[str]:
    """Partitions whose raw objects ``ref`` adds or changes compared with ``parent`` (all when no parent)."""
    if not parent:
        return list(partition_objects(store, cfg, ref))
    paths = [c.path for c in store.diff(raw_repo(cfg), parent, ref) if c.kind != "removed"]
    return sorted({p.rsplit("/", 1)[-1].removesuffix(".parquet") for p in paths if p.startswith("raw/")})


def version_months(store: VersionedStore, cfg: PipelineConfig, commit: str) -> list[str]:
    """The partitions (months, weeks) a data version holds, oldest first."""
    return list(partition_objects(store, cfg, commit))


def read_table(store: VersionedStore, cfg: PipelineConfig, commit: str, table: str) -> pd.DataFrame:
    """One raw table of a data version, all its partitions concatenated."""
    repo = raw_repo(cfg)
    paths = store.list_objects(repo, commit, prefix=f"raw/{table}/")
    if not paths:
        raise ValueError(f"data version {commit}: no {table!r} table in repository {repo!r}")
    return pd.concat([from_parquet_bytes(store.read(repo, commit, p)) for p in paths], ignore_index=True)


def read_version(store: VersionedStore, cfg: PipelineConfig, commit: str) -> dict[str, pd.DataFrame]:
    repo = raw_repo(cfg)
    tables = sorted({p.split("/")[1] for p in store.list_objects(repo, commit, prefix="raw/")})
    return {t: read_table(store, cfg, commit, t) for t in tables}


def month_tables(cfg: PipelineConfig, month: str) -> dict[str, pd.DataFrame]:
    """One partition's raw tables, produced by the dataset's source."""
    return get_source(cfg.dataset.source).load_month(month, cfg.dataset.sample_fraction)


def tables_from_dir(directory: str | Path) -> dict[str, pd.DataFrame]:
    """Prepared raw tables, one ``<table>.parquet`` each (a delivered file, a replay, a test's bad input)."""
    files = sorted(Path(directory).glob("*.parquet"))
    if not files:
        raise ValueError(f"tables_dir {str(directory)!r}: no <table>.parquet files")
    return {f.stem: pd.read_parquet(f) for f in files}


# ------------------------------------------------------------------ fault injection


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
