"""Prepared features of each data version, kept in the dataset's derived repository (never watched)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import derived_repo, from_parquet_bytes, read_version, to_parquet_bytes
from mlassets.core.features import SPLITS, prepare_features
from mlassets.core.store import VersionedStore

BRANCH = "main"


@dataclass(frozen=True)
class FeatureSet:
    data_version: str
    commit: str  # commit in the derived repository
    rows: dict[str, int]
    uris: dict[str, str]


def _path(data_version: str, split: str) -> str:
    return f"features/{data_version}/{split}.parquet"


def write_features(
    store: VersionedStore, cfg: PipelineConfig, data_version: str, metadata: Mapping[str, str] | None = None
) -> FeatureSet:
    """Prepare the splits of ``data_version`` and commit them to the derived repository."""
    parts = prepare_features(read_version(store, cfg, data_version), cfg)
    repo = derived_repo(cfg)
    store.create_repo(repo, default_branch=BRANCH)
    changes = {_path(data_version, s): to_parquet_bytes(parts[s]) for s in SPLITS}
    meta = {"data_version": data_version, **(metadata or {})}
    commit = store.commit(repo, BRANCH, changes, f"Features of {data_version[:12]}", meta)
    return FeatureSet(
        data_version=data_version,
        commit=commit.id,
        rows={s: len(parts[s]) for s in SPLITS},
        uris={s: store.uri(repo, commit.id, _path(data_version, s)) for s in SPLITS},
    )


def read_split(store: VersionedStore, cfg: PipelineConfig, data_version: str, split: str) -> pd.DataFrame:
    return from_parquet_bytes(store.read(derived_repo(cfg), BRANCH, _path(data_version, split)))


def export_splits(
    store: VersionedStore, cfg: PipelineConfig, data_version: str, directory: Path, splits: tuple[str, ...]
) -> dict[str, Path]:
    """Copy splits to local parquet files for a training process; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for split in splits:
        out[split] = directory / f"{split}.parquet"
        out[split].write_bytes(store.read(derived_repo(cfg), BRANCH, _path(data_version, split)))
    return out
