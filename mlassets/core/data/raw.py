"""Raw data in the versioned store: the layout of a dataset's repository and reads of any version.

Layout (branch ``main`` is the watched branch; only ingestion writes it, see ``ingest``):
``raw/<table>/<partition>.parquet``, one object per table and partition (a month, a week).
Derived artifacts go to the ``<name>-derived`` repository.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.config import PipelineConfig
from mlassets.core.config.checks import check_key
from mlassets.core.data.parquet import from_parquet_bytes, read_parquet_file
from mlassets.core.data.sources import get_source
from mlassets.core.data.sources.files import FilesSource
from mlassets.core.data.store import InvalidName, VersionedStore
from mlassets.core.data.store.base import validate_path, validate_ref

if TYPE_CHECKING:
    import pandas as pd

WATCHED_BRANCH = "main"


def raw_repo(cfg: PipelineConfig) -> str:
    return cfg.dataset.name.replace("_", "-")


def derived_repo(cfg: PipelineConfig) -> str:
    return f"{raw_repo(cfg)}-derived"


def main_table(cfg: PipelineConfig) -> str:
    """The table whose rows are the examples (the source's, e.g. ``flights``; a files or plug-in source's is
    named after the dataset)."""
    return get_source(cfg.dataset).main_table


def read_frame(store: VersionedStore, repo: str, ref: str, path: str, columns: list[str] | None = None) -> pd.DataFrame:
    """An object of the store as a frame; unreadable Parquet (truncated, not Parquet) names the object."""
    import pyarrow as pa

    try:
        return from_parquet_bytes(store.read(repo, ref, path), columns)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{repo}@{ref[:12]}:{path} is not readable Parquet: {exc}") from None


_DATA_VERSION = re.compile(r"^[0-9a-f]{40,64}$")


def check_partition_key(cfg: PipelineConfig, key: str) -> str:
    """A raw partition key as it enters (CLI, sensor, run config): a store-safe name matching the dataset's
    ``partitions.pattern``, checked before anything is made."""
    check_key(cfg.dataset.partitions.pattern, key, f"partition key of {cfg.dataset.name!r}")
    try:
        validate_ref(key)
        validate_path(raw_path("table", key))
    except InvalidName as exc:  # the store's own rule, the same on both backends
        raise ValueError(f"partition key {key!r}: {exc}") from None
    return key


def check_data_version(key: str) -> str:
    """A data-version partition key: a full store commit id (hex), checked before it names any path."""
    if not isinstance(key, str) or not _DATA_VERSION.fullmatch(key):
        raise ValueError(f"data version {str(key)[:80]!r} is not a store commit id (40-64 lowercase hex digits)")
    return key


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
    import pandas as pd

    repo = raw_repo(cfg)
    paths = store.list_objects(repo, commit, prefix=f"raw/{table}/")
    if not paths:
        raise ValueError(f"data version {commit}: no {table!r} table in repository {repo!r}")
    return pd.concat([read_frame(store, repo, commit, p) for p in paths], ignore_index=True)


def read_version(store: VersionedStore, cfg: PipelineConfig, commit: str) -> dict[str, pd.DataFrame]:
    repo = raw_repo(cfg)
    tables = sorted({p.split("/")[1] for p in store.list_objects(repo, commit, prefix="raw/")})
    return {t: read_table(store, cfg, commit, t) for t in tables}


def partition_tables(cfg: PipelineConfig, key: str, delivered: str | Path | None = None,
                     notes: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """One partition's raw tables from the dataset's source, or from ``delivered`` (a file, or a folder of
    ``<table>`` files: what ``mlassets ingest --from`` and a landing sensor hand over). What the files source
    left out (undeclared columns) is appended to ``notes``."""
    source = get_source(cfg.dataset)
    if delivered is not None and not isinstance(source, FilesSource):
        return tables_from_dir(delivered)
    tables = source.load(key, str(delivered)) if delivered is not None else source.load(key)
    if notes is not None and isinstance(source, FilesSource):
        notes.extend(source.notes)
    return tables


def stage_tables(cfg: PipelineConfig, key: str, directory: Path, delivered: str | Path | None = None,
                 notes: list[str] | None = None) -> dict[str, Path]:
    """``partition_tables`` as local Parquet files under ``directory``, one per table: streamed in batches of the
    memory budget from a files source (unless it samples: a sample is drawn from the whole partition), written
    from the frames of every other source."""
    from mlassets.core.data.parquet import to_parquet_bytes
    from mlassets.core.data.sources.files_stream import write_tables

    source = get_source(cfg.dataset)
    if isinstance(source, FilesSource) and cfg.dataset.sample_fraction >= 1:
        files = write_tables(source, key, directory, str(delivered) if delivered is not None else None)
        if notes is not None:
            notes.extend(source.notes)
        return files
    out = {}
    for name, frame in partition_tables(cfg, key, delivered, notes).items():
        out[name] = directory / f"{name}.parquet"
        out[name].write_bytes(to_parquet_bytes(frame))
    return out


def tables_from_dir(directory: str | Path) -> dict[str, pd.DataFrame]:
    """Prepared raw tables, one ``<table>.parquet`` each (a delivered folder, a replay, a test's bad input)."""
    files = sorted(Path(directory).glob("*.parquet"))
    if not files:
        raise ValueError(f"{str(directory)!r}: no <table>.parquet files")
    return {f.stem: read_parquet_file(f) for f in files}
