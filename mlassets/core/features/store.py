"""Prepared features of each data version, kept in the dataset's derived repository (never watched).

Incremental: each partition's joined frame is cached under a key of (sha256 of its raw objects, feature code
version, source, columns, time zone), so a new data version computes only its new or changed partitions. A
version's features are a manifest: the cached frame of each partition, its rows per split, and the split
bounds (global: they follow from the version's newest day). Readers assemble a split from it.

Nothing here holds a version: a frame is built and streamed into the store batch by batch (``build``), and a split
is read back in batches of the memory budget (``split_tables``), exported as Parquet in row groups of
``SPLIT_ROW_GROUP_ROWS`` rows.

    features/cache/<key>.parquet   one partition's frame      features/cache/<key>.json   its rows per day
    features/<data version>/manifest.json
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.data.batches import TableWriter, iter_tables, object_file, open_parquet
from mlassets.core.data.budget import SPLIT_ROW_GROUP_ROWS
from mlassets.core.data.days import local_days
from mlassets.core.data.raw import derived_repo, partition_objects, raw_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.features.build import build_partition
from mlassets.core.features.split import (
    FEATURE_CODE_VERSION,
    SPLITS,
    SplitBounds,
    check_splits,
    feature_columns,
    hash_split,
    split_by_hash,
    split_counts,
)
from mlassets.core.records import Record

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

BRANCH = "main"
CACHE = "features/cache/"


@dataclass(frozen=True, kw_only=True)
class FeatureSet(Record):
    """A version's prepared features: the manifest committed to the derived repository, rows per split."""

    data_version: str
    commit: str  # commit in the derived repository
    rows: dict[str, int]
    manifest_uri: str
    computed: list[str] = field(default_factory=list)  # partitions whose frames were built by this call
    reused: list[str] = field(default_factory=list)  # partitions whose cached frames were reused
    dropped_missing_target: int = 0  # rows without a target, dropped (dataset.drop_missing_target)


def manifest_path(data_version: str) -> str:
    return f"features/{data_version}/manifest.json"


def cache_key(store: VersionedStore, cfg: PipelineConfig, ref: str, paths: Mapping[str, str]) -> str:
    """sha256 of what a partition's frame depends on: its raw objects' checksums and the feature code."""
    objects = {table: store.stat(raw_repo(cfg), ref, path)["checksum"] for table, path in sorted(paths.items())}
    feats = cfg.features
    split = (hash_split(cfg) if feats.split == "hash"
             else {"method": "time", "timezone": feats.timezone, "time_column": cfg.dataset.time_column})
    blob = json.dumps({"code": FEATURE_CODE_VERSION, "source": cfg.dataset.source, "objects": objects,
                       "columns": feature_columns(cfg), "split": split,
                       "drop_missing_target": cfg.dataset.drop_missing_target}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def write_features(
    store: VersionedStore,
    cfg: PipelineConfig,
    data_version: str,
    metadata: Mapping[str, str] | None = None,
    reuse: bool = True,
) -> FeatureSet:
    """Build (or reuse) each partition's frame and commit the version's manifest to the derived repository.

    Each frame is built in batches and streamed into the store (``build.build_partition``); all of them and the
    manifest land as one commit. ``reuse=False`` builds every partition again (from scratch), overwriting cache
    entries with equal frames.
    """
    import pandas as pd

    repo = derived_repo(cfg)
    store.create_repo(repo, default_branch=BRANCH)
    cached = set(store.list_objects(repo, BRANCH, prefix=CACHE)) if reuse else set()
    entries: list[dict[str, Any]] = []
    infos: list[dict[str, Any]] = []
    computed, reused = [], []
    with (tempfile.TemporaryDirectory(prefix="mlassets-features-") as tmp,
          store.transaction(repo, BRANCH, f"Features of {data_version[:12]}", allow_empty=True) as tx):
        for partition, paths in partition_objects(store, cfg, data_version).items():
            key = cache_key(store, cfg, data_version, paths)
            if f"{CACHE}{key}.json" in cached:
                info = json.loads(store.read(repo, BRANCH, f"{CACHE}{key}.json"))
                reused.append(partition)
            else:
                frame = Path(tmp) / f"{key}.parquet"
                info = build_partition(store, cfg, data_version, partition, paths, frame)
                tx.put_file(f"{CACHE}{key}.parquet", frame)
                frame.unlink()
                tx.put(f"{CACHE}{key}.json", json.dumps(info, sort_keys=True).encode())
                computed.append(partition)
            entries.append({"partition": partition, "path": f"{CACHE}{key}.parquet", "rows": info["rows"]})
            infos.append(info)
        if not sum(info["rows"] for info in infos):
            raise ValueError(f"features: data version {data_version} holds no rows")
        split: dict[str, Any] = hash_split(cfg) if cfg.features.split == "hash" else {"method": "time"}
        if cfg.features.split == "time":
            bounds = SplitBounds.of(pd.Timestamp(max(day for info in infos for day in info["days"])), cfg)
            split.update(timezone=cfg.features.timezone, time_column=cfg.dataset.time_column, bounds=bounds.to_dict())
        for entry, info in zip(entries, infos, strict=True):
            entry["splits"] = (dict.fromkeys(SPLITS, 0) | info["splits"] if cfg.features.split == "hash"
                               else split_counts(info["days"], bounds))
        rows = {name: sum(e["splits"][name] for e in entries) for name in SPLITS}
        check_splits(rows, cfg.features.split)
        dropped = sum(info.get("dropped_missing_target", 0) for info in infos)
        manifest = {"data_version": data_version, "feature_code_version": FEATURE_CODE_VERSION, "split": split,
                    "rows": rows, "partitions": entries, "dropped_missing_target": dropped}
        tx.put(manifest_path(data_version), json.dumps(manifest, indent=1, sort_keys=True).encode())
        tx.metadata.update({"data_version": data_version, "partitions_computed": ",".join(computed),
                            **(metadata or {})})
    assert tx.commit is not None  # the transaction landed (or raised)
    return FeatureSet(data_version=data_version, commit=tx.commit.id, rows=rows,
                      manifest_uri=store.uri(repo, tx.commit.id, manifest_path(data_version)), computed=computed,
                      reused=reused, dropped_missing_target=dropped)


def read_manifest(store: VersionedStore, cfg: PipelineConfig, data_version: str) -> dict[str, Any]:
    return json.loads(store.read(derived_repo(cfg), BRANCH, manifest_path(data_version)))


def split_tables(store: VersionedStore, cfg: PipelineConfig, data_version: str, split: str,
                 columns: list[str] | None = None, budget_mb: int | None = None) -> Iterator[pa.Table]:
    """One split of a version, in order (partitions as the manifest lists them, each cached frame's rows in
    order), as Arrow tables of the memory budget (``budget_mb``, at most the dataset's), read from the cached frames
    where they lie; only ``columns`` (those of them a frame has), when given: the others are never read."""
    import pyarrow as pa

    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}")
    manifest = read_manifest(store, cfg, data_version)
    how = manifest["split"]  # the split as written: a version is always read back the way it was split
    repo = derived_repo(cfg)
    budget = min(budget_mb or cfg.dataset.memory_budget_mb, cfg.dataset.memory_budget_mb)
    read = None if columns is None else [*columns, *(how["key"] if how["method"] == "hash" else [how["time_column"]])]
    for entry in manifest["partitions"]:
        wanted = entry["splits"][split]
        if not wanted:
            continue
        with object_file(store, repo, BRANCH, entry["path"]) as file:
            reader = open_parquet(file, f"{repo}@{BRANCH}:{entry['path']}")
            for table in iter_tables(reader, budget, read, name=entry["path"]):
                if wanted != entry["rows"]:
                    table = table.filter(pa.array(assign_splits(table, how) == split))
                if columns is not None:
                    table = table.select([c for c in columns if c in table.column_names])
                if table.num_rows:
                    yield table
                del table  # before the next batch is read


def assign_splits(table: pa.Table, how: Mapping[str, Any]) -> np.ndarray:
    """The split of each row of a cached frame's batch, by the manifest's split (hash, or time and bounds)."""
    if how["method"] == "hash":
        return split_by_hash(table.select(list(how["key"])).to_pandas(), how).to_numpy()
    times = table.select([how["time_column"]]).to_pandas()[how["time_column"]]
    return SplitBounds.from_dict(how["bounds"]).assign(local_days(times, how["timezone"])).to_numpy()


def read_split(store: VersionedStore, cfg: PipelineConfig, data_version: str, split: str) -> pd.DataFrame:
    """One split of a version as one frame in memory (``split_tables``; ``export_splits`` never holds it)."""
    import pandas as pd

    return pd.concat([table.to_pandas() for table in split_tables(store, cfg, data_version, split)],
                     ignore_index=True)


def split_column(store: VersionedStore, cfg: PipelineConfig, data_version: str, split: str, column: str) -> np.ndarray:
    """One column of a split, in ``split_tables``' order: only that column is kept of each batch."""
    import numpy as np

    parts = [table.column(column).to_numpy(zero_copy_only=False)
             for table in split_tables(store, cfg, data_version, split, [column]) if column in table.column_names]
    return np.concatenate(parts) if parts else np.empty(0)


def export_splits(
    store: VersionedStore, cfg: PipelineConfig, data_version: str, directory: Path, splits: tuple[str, ...]
) -> dict[str, Path]:
    """Write splits to local Parquet files for a training process, streamed in batches of the memory budget;
    return their paths. Rows are in ``split_tables``' order, in row groups of ``SPLIT_ROW_GROUP_ROWS`` rows (the
    last may hold fewer), so a loader can read one row group at a time."""
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for split in splits:
        writer = TableWriter(directory / f"{split}.parquet", row_group_rows=SPLIT_ROW_GROUP_ROWS)
        for table in split_tables(store, cfg, data_version, split):
            writer.write(table)
            del table
        writer.close()
        out[split] = writer.path
    return out
