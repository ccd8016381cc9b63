"""Ingestion: a partition's raw tables reach the watched branch only through a validated store transaction.

The tables and the partition's target summary are written in ``VersionedStore.transaction`` (a short-lived
branch taken from ``main``), staged, checked there against ``main``, and land as ONE commit (the new data
version) only if every blocking check passes; a failed check, an error or a killed writer lands nothing.
Identical tables for a partition land nothing either: the ingest says so and no data version is created.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.config import PipelineConfig
from mlassets.core.data.outcome import CheckOutcome
from mlassets.core.data.parquet import to_parquet_bytes
from mlassets.core.data.raw import (
    WATCHED_BRANCH,
    check_partition_key,
    main_table,
    partition_objects,
    raw_path,
    raw_repo,
    stage_tables,
)
from mlassets.core.data.snapshot import VersionChecks, check_version
from mlassets.core.data.store import VersionedStore
from mlassets.core.data.summary import PartitionSummary, summarize_reader, summary_path
from mlassets.core.data.version_keys import key_of, version_key
from mlassets.core.records import Record

if TYPE_CHECKING:
    import pandas as pd

INGEST_ID = "mlassets_ingest_id"  # commit metadata: which ingest made the commit


class DataRejected(ValueError):
    """A partition failed a blocking check; nothing reached the watched branch."""

    def __init__(self, partition: str, checks: VersionChecks) -> None:
        self.partition = partition
        self.outcomes = checks.outcomes
        self.lines = checks.failures()
        super().__init__(f"partition {partition} was not ingested:\n" + "\n".join(self.lines))


@dataclass(frozen=True, kw_only=True)
class Ingested(Record):
    """What an ingest did: the watched branch's head afterwards, and whether that is a new data version."""

    partition: str
    data_version: str  # the watched branch's head after the ingest (new, or the unchanged one)
    created: bool  # False: the same tables were already there, nothing was committed
    parent: str  # the head the new version was committed on ("" when nothing was created)
    staged: str  # the validated commit of the transaction ("" when nothing was created)
    rows: dict[str, int]  # per table
    checks: list[CheckOutcome]  # empty when nothing was new, or ingested without validation
    message: str
    notes: list[str] = field(default_factory=list)  # what the source left out (undeclared columns), said once
    key: str = ""  # the data version's partition key (``2024-01.14bdf921``; see ``version_keys``)
    missing_target: int = 0  # rows without a target let in by dataset.drop_missing_target (dropped before the split)

    def derived(self) -> list[str]:
        """The checks whose bounds were derived from the data (the config left them out), one line each."""
        return [f"{o.name}: {o.message}" for o in self.checks if "derived: " in o.message]


def table_rows(table: pd.DataFrame | Path) -> int:
    """Rows of a frame, or of a Parquet file (from its footer)."""
    from mlassets.core.data.batches import open_parquet

    return open_parquet(table, str(table)).metadata.num_rows if isinstance(table, Path) else len(table)


def count_missing(table: pd.DataFrame | Path, column: str, budget_mb: int) -> int:
    """Rows of a frame or a Parquet file (read one column at a time) without a value in ``column``."""
    from mlassets.core.data.batches import iter_frames, open_parquet

    if not isinstance(table, Path):
        return int(table[column].isna().sum()) if column in table.columns else 0
    reader = open_parquet(table, str(table))
    if column not in reader.schema_arrow.names:
        return 0
    return sum(int(frame[column].isna().sum()) for frame in iter_frames(reader, budget_mb, [column]))


def summarize(partition: str, table: pd.DataFrame | Path, cfg: PipelineConfig) -> PartitionSummary:
    """The main table's summary, from a frame or (reading only the target column) a Parquet file."""
    from mlassets.core.data.batches import open_parquet

    if not isinstance(table, Path):
        return PartitionSummary.of_frame(partition, table, cfg.dataset.target, cfg.dataset.time_column or "")
    return summarize_reader(partition, open_parquet(table, str(table)), cfg.dataset.target,
                            cfg.dataset.memory_budget_mb, cfg.dataset.time_column or "")


def ingest_partition(
    store: VersionedStore,
    cfg: PipelineConfig,
    partition: str,
    tables: Mapping[str, pd.DataFrame | Path] | None = None,
    metadata: Mapping[str, str] | None = None,
    validate: bool = True,
) -> Ingested:
    """Commit one partition's raw tables to the watched branch as one validated commit (or nothing).

    ``tables``: frames, or local Parquet files (``raw.stage_tables``: streamed into the store, never held); by
    default the source's, staged in a temporary folder. ``validate=False`` skips the checks (the ``snapshot``
    asset's blocking checks still judge the version).
    """
    check_partition_key(cfg, partition)
    if tables is None:
        with tempfile.TemporaryDirectory(prefix="mlassets-ingest-") as tmp:
            staged = stage_tables(cfg, partition, Path(tmp))
            return ingest_partition(store, cfg, partition, staged, metadata, validate)
    tables = dict(tables)
    main = main_table(cfg)
    if main not in tables:
        raise ValueError(f"partition {partition}: table {main!r} is missing (got {sorted(tables)})")
    repo = raw_repo(cfg)
    store.create_repo(repo, default_branch=WATCHED_BRANCH)
    rows = {name: table_rows(table) for name, table in tables.items()}
    missing_target = count_missing(tables[main], cfg.dataset.target, cfg.dataset.memory_budget_mb)
    changes: dict[str, pd.DataFrame | Path | bytes] = {raw_path(name, partition): t for name, t in tables.items()}
    changes[summary_path(partition)] = summarize(partition, tables[main], cfg).to_json().encode()
    token = uuid.uuid4().hex
    meta = {"partition": partition, "rows": str(sum(rows.values())), "validated": str(validate).lower(),
            **{f"rows_{name}": str(n) for name, n in rows.items()}, **(metadata or {}), INGEST_ID: token}
    checks: VersionChecks | None = None
    with store.transaction(repo, WATCHED_BRANCH, f"Ingest {cfg.dataset.name} {partition}", meta) as tx:
        for path, data in changes.items():
            if isinstance(data, Path):
                tx.put_file(path, data)
            else:
                tx.put(path, data if isinstance(data, bytes) else to_parquet_bytes(data))
        for path in partition_objects(store, cfg, tx.base).get(partition, {}).values():
            if path not in changes:  # a delivery replaces the whole partition: no table is inherited
                tx.delete(path)
        staged = tx.stage()
        diff = store.diff(repo, tx.base, staged.id)
        if diff and validate:
            checks = check_version(store, cfg, staged.id, tx.base, scope=[partition])
            if not checks.passed:
                raise DataRejected(partition, checks)
        changed = sorted({c.path.split("/")[1] for c in diff if c.kind != "added" and c.path.startswith("raw/")})
        if changed:
            tx.message += f" (changed: {', '.join(changed)})"
        tx.metadata["staged_commit"] = staged.id
    landed = tx.commit
    assert landed is not None  # the transaction landed (or raised)
    if landed.metadata.get(INGEST_ID) != token:  # nothing new: the same tables were already on the branch
        key = key_of(store, cfg, landed)
        return Ingested(partition=partition, data_version=landed.id, created=False, parent="", staged="", rows=rows,
                        checks=[], key=key, missing_target=missing_target,
                        message=f"partition {partition}: the same tables are already on "
                                                    f"{WATCHED_BRANCH} at {key}; no new data version")
    key = version_key([partition], landed.id)
    return Ingested(partition=partition, data_version=landed.id, created=True, parent=landed.parents[0],
                    staged=staged.id, rows=rows, checks=checks.outcomes if checks else [], key=key,
                    missing_target=missing_target,
                    message=f"{landed.message}: data version {key}")
