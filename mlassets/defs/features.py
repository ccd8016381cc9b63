"""group features: train / validation / holdout by time, from per-partition frames cached in the derived repository."""

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.snapshot import Snapshot
from mlassets.core.features.store import FeatureSet, write_features
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_metadata, store_link, version_metadata
from mlassets.defs.partitions import data_versions
from mlassets.defs.resources import StoreResource


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    @dg.asset(key=keys.features, partitions_def=data_versions(cfg), group_name="features",
              ins={"snapshot": dg.AssetIn(keys.snapshot)})
    def features(context: dg.AssetExecutionContext, store: StoreResource, snapshot: Snapshot) -> dg.Output[FeatureSet]:
        """Joined rows of the version split by time; only new or changed partitions are computed again."""
        backend = store.open()
        result = write_features(backend, cfg, snapshot.commit, run_metadata(context))
        return dg.Output(result, metadata={
            **version_metadata(backend, cfg, result.data_version),
            "data_commit": result.data_version,
            "parent_commit": snapshot.parent,
            "store_uri": backend.uri(raw_repo(cfg), result.data_version),
            "store_commit": store_link(backend, raw_repo(cfg), result.data_version),
            "features_commit": result.commit,
            "manifest_uri": result.manifest_uri,
            "partitions_computed": ", ".join(result.computed) or "none",
            "partitions_reused": ", ".join(result.reused) or "none",
            **{f"rows_{split}": dg.MetadataValue.int(n) for split, n in result.rows.items()},
            "dropped_missing_target": dg.MetadataValue.int(result.dropped_missing_target),
        })

    return [features]
