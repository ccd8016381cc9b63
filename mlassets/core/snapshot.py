"""Snapshot a data version: what it holds, and whether it may reach training (blocking checks).

The same checks gate ingestion (on the staged partition, before it reaches the watched branch) and the
``snapshot`` asset (on the whole version again: defense in depth, visible in the Dagster UI).
"""

from __future__ import annotations

import io
from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd
import pyarrow.parquet as pq

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import (
    changed_partitions,
    from_parquet_bytes,
    main_table,
    parquet_rows,
    partition_objects,
    raw_repo,
)
from mlassets.core.store import VersionedStore
from mlassets.core.validation import CheckOutcome, validate_min_rows, validate_schema
from mlassets.core.validation_counts import validate_row_change, validate_target_mean, validate_target_quantiles

CHECK_NAMES = ("schema", "min_rows", "row_change", "target_mean", "target_quantiles")


@dataclass(frozen=True)
class VersionChecks:
    outcomes: list[CheckOutcome]
    rows_per_partition: dict[str, int]  # rows of the main table, from its one object per partition
    new_partitions: list[str]  # added or changed compared with the parent

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    def failures(self) -> list[str]:
        """One line per failed check: ``<check>: <message naming the column and an offending value>``."""
        return [f"{o.name}: {o.message}" for o in self.outcomes if not o.passed]


@dataclass(frozen=True)
class SnapshotReport:
    commit: str
    parent: str
    months: list[str]
    rows: int
    rows_per_month: dict[str, int]
    new_partitions: list[str]
    uri: str
    outcomes: list[CheckOutcome]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)


def _column(blob: bytes, column: str) -> pd.Series | None:
    if column not in pq.ParquetFile(io.BytesIO(blob)).schema_arrow.names:
        return None  # the schema check of that partition says so
    return from_parquet_bytes(blob, columns=[column])[column]


def _concat(parts: list[pd.Series | None]) -> pd.Series | None:
    present = [p for p in parts if p is not None]
    return pd.concat(present, ignore_index=True) if present else None


def check_version(
    store: VersionedStore, cfg: PipelineConfig, ref: str, parent: str, scope: Collection[str] | None = None
) -> VersionChecks:
    """Every blocking check of the version at ``ref`` against ``parent``.

    Schema and minimum rows cover the partitions in ``scope`` (default: all); row change and target
    distribution compare the partitions that changed since ``parent`` with the others.
    """
    repo, table, target = raw_repo(cfg), main_table(cfg), cfg.dataset.target
    paths = {k: t[table] for k, t in partition_objects(store, cfg, ref).items() if table in t}
    new = [k for k in changed_partitions(store, cfg, ref, parent) if k in paths]
    scope = list(paths) if scope is None else [k for k in paths if k in scope]
    frames: dict[str, pd.DataFrame] = {}
    counts: dict[str, int] = {}
    reference: list[pd.Series | None] = []
    for key, path in paths.items():
        blob = store.read(repo, ref, path)
        counts[key] = parquet_rows(blob)
        if key in scope or key in new:
            frames[key] = from_parquet_bytes(blob)
        if key not in new:
            reference.append(frames[key].get(target) if key in frames else _column(blob, target))
    checked = [frames[k] for k in scope]
    schema_frame = pd.concat(checked, ignore_index=True) if checked else pd.DataFrame()
    new_values = _concat([frames[k].get(target) for k in new])
    ref_values = _concat(reference)
    outcomes = [
        validate_schema(schema_frame, cfg.dataset),
        validate_min_rows({k: counts[k] for k in scope}, cfg.dataset),
        validate_row_change(counts, new, cfg.dataset),
        validate_target_mean(new_values, ref_values, new, cfg.dataset),
        validate_target_quantiles(new_values, ref_values, new, cfg.dataset),
    ]
    return VersionChecks(outcomes, counts, new)


def snapshot_version(store: VersionedStore, cfg: PipelineConfig, commit: str) -> SnapshotReport:
    """Read the main table at ``commit`` and run every blocking check on it, against its parent."""
    repo = raw_repo(cfg)
    info = store.get_commit(repo, commit)
    parent = info.parents[0] if info.parents else ""
    checks = check_version(store, cfg, info.id, parent)
    return SnapshotReport(
        commit=info.id,
        parent=parent,
        months=list(checks.rows_per_partition),
        rows=sum(checks.rows_per_partition.values()),
        rows_per_month=checks.rows_per_partition,
        new_partitions=checks.new_partitions,
        uri=store.uri(repo, info.id),
        outcomes=checks.outcomes,
    )
