"""Prepared features of each data version, kept in the dataset's derived repository (never watched).

Incremental: each partition's joined frame is cached under a key of (sha256 of its raw objects, feature code
version, source, columns, time zone), so a new data version computes only its new or changed partitions. A
version's features are a manifest: the cached frame of each partition, its rows per split, and the split
bounds (global: they follow from the version's newest day). Readers assemble a split from it.

    features/cache/<key>.parquet   one partition's frame      features/cache/<key>.json   its rows per day
    features/<data version>/manifest.json
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.data.days import local_days
from mlassets.core.data.parquet import to_parquet_bytes
from mlassets.core.data.raw import derived_repo, partition_objects, raw_repo, read_frame
from mlassets.core.data.store import VersionedStore
from mlassets.core.features.split import (
    FEATURE_CODE_VERSION,
    SPLITS,
    SplitBounds,
    check_splits,
    day_histogram,
    feature_columns,
    hash_split,
    partition_frame,
    split_by_hash,
    split_counts,
    without_missing_target,
)
from mlassets.core.records import Record

if TYPE_CHECKING:
    import pandas as pd

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


def _build(store: VersionedStore, cfg: PipelineConfig, ref: str, partition: str,
           paths: Mapping[str, str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A partition's frame and what the manifest needs of it without reading it again."""
    repo = raw_repo(cfg)
    frame = partition_frame({t: read_frame(store, repo, ref, p) for t, p in paths.items()}, cfg)
    kept, dropped = without_missing_target(frame, cfg)
    info: dict[str, Any] = {"partition": partition, "rows": len(kept)}
    if cfg.features.split == "hash":  # a row's split is its own: counted once, here
        info["splits"] = {name: int(n) for name, n in split_by_hash(kept, hash_split(cfg)).value_counts().items()}
    else:
        info["days"] = day_histogram(kept, cfg)
    info["dropped_missing_target"] = dropped
    return kept, info


def write_features(
    store: VersionedStore,
    cfg: PipelineConfig,
    data_version: str,
    metadata: Mapping[str, str] | None = None,
    reuse: bool = True,
) -> FeatureSet:
    """Build (or reuse) each partition's frame and commit the version's manifest to the derived repository.

    ``reuse=False`` builds every partition again (from scratch), overwriting cache entries with equal frames.
    """
    import pandas as pd

    repo = derived_repo(cfg)
    store.create_repo(repo, default_branch=BRANCH)
    cached = set(store.list_objects(repo, BRANCH, prefix=CACHE)) if reuse else set()
    changes: dict[str, bytes] = {}
    entries: list[dict[str, Any]] = []
    infos: list[dict[str, Any]] = []
    computed, reused = [], []
    for partition, paths in partition_objects(store, cfg, data_version).items():
        key = cache_key(store, cfg, data_version, paths)
        if f"{CACHE}{key}.json" in cached:
            info = json.loads(store.read(repo, BRANCH, f"{CACHE}{key}.json"))
            reused.append(partition)
        else:
            frame, info = _build(store, cfg, data_version, partition, paths)
            changes[f"{CACHE}{key}.parquet"] = to_parquet_bytes(frame)
            changes[f"{CACHE}{key}.json"] = json.dumps(info, sort_keys=True).encode()
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
    changes[manifest_path(data_version)] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    meta = {"data_version": data_version, "partitions_computed": ",".join(computed), **(metadata or {})}
    commit = store.commit(repo, BRANCH, changes, f"Features of {data_version[:12]}", meta)
    return FeatureSet(data_version=data_version, commit=commit.id, rows=rows,
                      manifest_uri=store.uri(repo, commit.id, manifest_path(data_version)), computed=computed,
                      reused=reused, dropped_missing_target=dropped)


def read_manifest(store: VersionedStore, cfg: PipelineConfig, data_version: str) -> dict[str, Any]:
    return json.loads(store.read(derived_repo(cfg), BRANCH, manifest_path(data_version)))


def read_split(store: VersionedStore, cfg: PipelineConfig, data_version: str, split: str) -> pd.DataFrame:
    """One split of a version, assembled from the cached partition frames its manifest lists."""
    import pandas as pd

    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}")
    manifest = read_manifest(store, cfg, data_version)
    how = manifest["split"]  # the split as written: a version is always read back the way it was split
    frames = []
    for entry in manifest["partitions"]:
        wanted = entry["splits"][split]
        if not wanted:
            continue
        frame = read_frame(store, derived_repo(cfg), BRANCH, entry["path"])
        if wanted != entry["rows"]:
            if how["method"] == "hash":
                assigned = split_by_hash(frame, how)
            else:
                assigned = SplitBounds.from_dict(how["bounds"]).assign(local_days(frame[how["time_column"]],
                                                                                  how["timezone"]))
            frame = frame[assigned.to_numpy() == split]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def export_splits(
    store: VersionedStore, cfg: PipelineConfig, data_version: str, directory: Path, splits: tuple[str, ...]
) -> dict[str, Path]:
    """Write splits to local parquet files for a training process; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for split in splits:
        out[split] = directory / f"{split}.parquet"
        out[split].write_bytes(to_parquet_bytes(read_split(store, cfg, data_version, split)))
    return out
