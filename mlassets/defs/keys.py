"""Asset keys of one dataset's graph, prefixed by the dataset name (``flights/snapshot``)."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.naming import asset_path


@dataclass(frozen=True)
class DatasetKeys:
    raw: dg.AssetKey
    snapshot: dg.AssetKey
    features: dg.AssetKey
    checkpoints: dg.AssetKey
    candidate_model: dg.AssetKey
    evaluation: dg.AssetKey
    gate_result: dg.AssetKey
    registered_model: dg.AssetKey
    champion: dg.AssetKey
    predictions: dg.AssetKey
    drift_report: dg.AssetKey  # new data against the champion's training data, per data version
    decay: dg.AssetKey  # the champion's metric against its age, per model
    tuned_hparams: dg.AssetKey  # the newest Optuna study's best values

    @classmethod
    def of(cls, cfg: PipelineConfig) -> DatasetKeys:
        return cls(**{f: dg.AssetKey(asset_path(cfg.dataset.name, f)) for f in cls.__dataclass_fields__})
