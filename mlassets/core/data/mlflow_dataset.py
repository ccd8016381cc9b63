"""The data version of a training run, logged to MLflow as a dataset input named by its store commit.

MLflow limits a dataset digest to 36 characters and a commit id has 64, so the digest is the commit id's
first 36 characters (unique in practice, as a git short sha) and the full id is in the input's tags and in
the dataset source's URI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mlflow
from mlflow.data.dataset_source import DatasetSource
from mlflow.data.meta_dataset import MetaDataset

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.store import VersionedStore

DIGEST_CHARS = 36  # mlflow.utils.validation.MAX_DATASET_DIGEST_SIZE


class VersionedStoreSource(DatasetSource):
    """A data version in the versioned store: ``local://<repo>/<commit>`` or the lakeFS equivalent."""

    def __init__(self, uri: str) -> None:
        self.uri = uri

    @staticmethod
    def _get_source_type() -> str:
        return "versioned_store"

    def load(self, **kwargs: Any) -> str:
        return self.uri  # read it with mlassets.core.data.raw.read_version

    @staticmethod
    def _can_resolve(raw_source: Any) -> bool:
        return False

    @classmethod
    def _resolve(cls, raw_source: Any) -> VersionedStoreSource:
        return cls(str(raw_source))

    def to_dict(self) -> dict[str, Any]:
        return {"uri": self.uri}

    @classmethod
    def from_dict(cls, source_dict: dict[Any, Any]) -> VersionedStoreSource:
        return cls(source_dict["uri"])


def digest_of(data_version: str) -> str:
    """The MLflow dataset digest of a data version: its commit id, shortened to MLflow's limit."""
    return data_version[:DIGEST_CHARS]


def data_version_dataset(cfg: PipelineConfig, data_version: str, uri: str) -> MetaDataset:
    return MetaDataset(VersionedStoreSource(uri), name=f"{cfg.dataset.name}@{data_version[:12]}",
                       digest=digest_of(data_version))


def log_data_version(
    cfg: PipelineConfig, data_version: str, rows: Mapping[str, int] | int, store: VersionedStore | None = None
) -> None:
    """Log the data version the active MLflow run trained on as its ``training`` dataset input."""
    uri = store.uri(raw_repo(cfg), data_version) if store is not None else f"{raw_repo(cfg)}@{data_version}"
    counts = {"rows": rows} if isinstance(rows, int) else {f"rows_{k}": n for k, n in rows.items()}
    tags = {"data_commit": data_version, "dataset": cfg.dataset.name, "store_uri": uri,
            **{k: str(n) for k, n in counts.items()}}
    mlflow.log_input(data_version_dataset(cfg, data_version, uri), context="training", tags=tags)
