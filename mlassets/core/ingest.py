"""Ingestion: a partition's raw tables reach the watched branch only through a validated, short-lived branch.

Stage on ``ingest-<partition>-<uuid>`` (branched from ``main``), run every blocking check against ``main``,
then merge into ``main`` (the merge commit is the new data version) or, when a check fails, drop the
branch: ``main`` never sees invalid data, and nothing the pipeline derives is ever written there.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import WATCHED_BRANCH, main_table, month_tables, raw_path, raw_repo, to_parquet_bytes
from mlassets.core.snapshot import VersionChecks, check_version
from mlassets.core.store import Commit, StoreError, VersionedStore
from mlassets.core.validation import CheckOutcome

Validator = Callable[[str, str], VersionChecks]  # (staged commit, base commit) -> checks


class DataRejected(ValueError):
    """A partition failed a blocking check; nothing reached the watched branch."""

    def __init__(self, partition: str, checks: VersionChecks) -> None:
        self.partition = partition
        self.outcomes = checks.outcomes
        self.lines = checks.failures()
        super().__init__(f"partition {partition} was not ingested:\n" + "\n".join(self.lines))


@dataclass(frozen=True)
class Ingested:
    commit: Commit  # on the watched branch; its id is the new data version
    parent: str  # the watched branch's head before this ingest
    staged: str  # the commit on the short-lived branch that was validated and merged
    rows: dict[str, int]  # per table
    outcomes: list[CheckOutcome]  # empty when ingested without validation


def commit_validated(
    store: VersionedStore, repo: str, partition: str, changes: Mapping[str, bytes], message: str,
    metadata: Mapping[str, str], validate: Validator | None,
) -> tuple[Commit, Commit, VersionChecks | None]:
    """Stage ``changes`` on a short-lived branch, validate there, merge into the watched branch if valid.

    Returns (merge commit, staged commit, checks); raises DataRejected with main's head unchanged. The
    temporary branch is deleted either way. (The one place to switch to the store's transaction API.)
    """
    base = store.resolve(repo, WATCHED_BRANCH)
    branch = f"ingest-{partition}-{uuid.uuid4().hex[:12]}"
    store.create_branch(repo, branch, source=base)
    try:
        staged = store.commit(repo, branch, changes, message, metadata)
        checks = validate(staged.id, base) if validate else None
        if checks is not None and not checks.passed:
            raise DataRejected(partition, checks)
        merged = store.merge(repo, branch, WATCHED_BRANCH, message, {**metadata, "staged_commit": staged.id})
    finally:
        with contextlib.suppress(StoreError):  # a leftover staging branch is harmless: nothing watches it
            store.delete_branch(repo, branch)
    return merged, staged, checks


def ingest_month(
    store: VersionedStore,
    cfg: PipelineConfig,
    month: str,
    tables: Mapping[str, pd.DataFrame] | None = None,
    metadata: Mapping[str, str] | None = None,
    validate: bool = True,
) -> Ingested:
    """Commit one partition's raw tables to the watched branch as one validated commit.

    ``validate=False`` skips the checks (the ``snapshot`` asset's blocking checks still judge the version).
    """
    if month not in cfg.dataset.months:
        raise ValueError(f"partition {month!r} is not in dataset.months of {cfg.dataset.name!r}")
    tables = dict(month_tables(cfg, month) if tables is None else tables)
    if main_table(cfg) not in tables:
        raise ValueError(f"partition {month}: table {main_table(cfg)!r} is missing (got {sorted(tables)})")
    repo = raw_repo(cfg)
    store.create_repo(repo, default_branch=WATCHED_BRANCH)
    rows = {name: len(df) for name, df in tables.items()}
    changes = {raw_path(name, month): to_parquet_bytes(df) for name, df in tables.items()}
    meta = {"partition": month, "rows": str(sum(rows.values())), "validated": str(validate).lower(),
            **{f"rows_{name}": str(n) for name, n in rows.items()}, **(metadata or {})}

    def checks(staged: str, base: str) -> VersionChecks:
        return check_version(store, cfg, staged, base, scope=[month])

    merged, staged, outcome = commit_validated(
        store, repo, month, changes, f"Ingest {cfg.dataset.name} {month}", meta, checks if validate else None
    )
    parent = merged.parents[0] if merged.parents else ""
    return Ingested(merged, parent, staged.id, rows, outcome.outcomes if outcome else [])
