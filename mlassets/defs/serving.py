"""group serving: batch inference with the champion on each data version's newest rows."""

from collections.abc import Iterator

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.version_keys import resolve_key
from mlassets.core.evaluate.stream import READ_BUDGET_MB
from mlassets.core.features.store import split_tables
from mlassets.defs.display import number
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import mlflow_links, run_metadata, version_metadata
from mlassets.defs.partitions import data_versions


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:

    name = cfg.model.registered_name

    @dg.asset(key=keys.predictions, partitions_def=data_versions(cfg), group_name="serving",
              deps=[keys.features, keys.champion], required_resource_keys={"store", "mlflow"},
              kinds={"pytorch", "mlflow"}, output_required=False)
    def predictions(context: dg.AssetExecutionContext) -> Iterator[dg.Output]:  # a PredictionSet
        """The champion's predictions for this version's holdout rows (its newest days), committed to the
        derived repository; refuses a champion whose record holds no passing gate or forced promotion, and
        materializes nothing while there is no champion (``promotion: manual`` before the first promote)."""
        import mlflow

        from mlassets.serve import NoChampion, ServingError, load_champion, write_predictions

        try:
            model = load_champion(name, tracking_uri=mlflow.get_tracking_uri())
        except NoChampion as exc:
            context.log.warning(f"no predictions: {exc}")
            return
        except ServingError as exc:
            raise dg.Failure(f"predictions refused: {exc}") from None
        store = context.resources.store.open()
        version = resolve_key(store, cfg, context.partition_key)
        result = write_predictions(store, cfg, version, model,  # in chunks of the read budget, each read traced
                                   lambda: split_tables(store, cfg, version, "holdout", budget_mb=READ_BUDGET_MB),
                                   run_metadata(context))
        metadata: dict[str, object] = {
            **version_metadata(store, cfg, version),
            "model_name": name, "model_version": model.version, "serving_basis": model.basis,
            "data_commit": version, "rows": dg.MetadataValue.int(result.rows),
            "predictions_commit": result.commit, "uri": result.uri,
            **{f"{k}_link": v for k, v in mlflow_links(model=name, version=model.version).items()},
        }
        if result.mae is not None:
            metadata["mae"] = number(result.mae)
        if result.accuracy is not None:
            metadata["accuracy"] = number(result.accuracy)
        yield dg.Output(result, metadata=metadata)

    return [predictions]
