"""group tuning: ``tuned_hparams``, an Optuna study on a data version's validation split (never the holdout).

It tunes the newest data version (or the one the run config names); each trial is an MLflow run nested under
the Dagster run's. Training takes the newest tuned values when ``tuning.apply`` is true. The ``<dataset>_tune``
job runs it on demand, and on ``tuning.schedule`` when one is set.
"""

import tempfile
from pathlib import Path

import dagster as dg
from pydantic import Field

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.tune.record import TunedHparams
from mlassets.core.tune.space import trial_length
from mlassets.defs.display import number
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions


class TuneRunConfig(dg.Config):
    data_version: str = Field(default="", description="the data version (its partition key) to tune on "
                                                      "(default: the newest)")
    trials: int = Field(default=0, ge=0, description="trials this run adds to the study (0: tuning.trials)")


def tune_job_name(cfg: PipelineConfig) -> str:
    return f"{cfg.dataset.name}_tune"


def chosen_version(known: list[str], wanted: str, dataset: str) -> str:
    """The data version (its partition key) a study runs on: ``wanted``, else the newest one known (added last)."""
    from mlassets.core.data.version_keys import check_version_key

    if wanted:
        if wanted not in known:
            raise ValueError(f"data_version {wanted[:80]!r} is not a data version of {dataset} ({len(known)} known)")
        return check_version_key(wanted)
    if not known:
        raise ValueError(f"{dataset} has no data version yet: ingest data and build its features first")
    return check_version_key(known[-1])


def _trials_table(tuned: TunedHparams) -> dg.TableMetadataValue:
    def rounded(value: float | None) -> float | None:  # 4 significant digits: learning rates are small
        return None if value is None else float(f"{value:.4g}")

    columns = [("number", "int"), ("state", "string"), (f"val_{tuned.metric}", "float"), ("last", "float"),
               ("epochs", "int"), *((name, "float") for name in tuned.params)]
    rows = [dg.TableRecord({"number": t.number, "state": t.state, f"val_{tuned.metric}": rounded(t.value),
                            "last": rounded(t.last), "epochs": t.epochs,
                            **{name: rounded(t.values.get(name)) for name in tuned.params}}) for t in tuned.trials]
    return dg.MetadataValue.table(rows, dg.TableSchema([dg.TableColumn(name, kind) for name, kind in columns]))


def _metadata(tuned: TunedHparams) -> dict[str, object]:
    return {
        f"best_val_{tuned.metric}": number(tuned.best_value), "best_trial": tuned.best_trial,
        **{f"best_{name}": number(value) for name, value in tuned.values.items()},
        "trials_complete": tuned.trials_complete, "trials_pruned": tuned.trials_pruned,
        "trials_failed": tuned.trials_failed, "trials_run": tuned.trials_run, "trials": _trials_table(tuned),
        "study": tuned.study_name, "storage": tuned.storage, "data_commit": tuned.data_version,
        "mlflow_run_id": tuned.mlflow_run_id, "seconds": number(tuned.seconds, 1),
    }


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    @dg.asset(key=keys.tuned_hparams, group_name="tuning", deps=[keys.features], kinds={"optuna", "mlflow"},
              required_resource_keys={"store", "mlflow"},
              description=f"Best {', '.join(cfg.tuning.params)} of an Optuna study ({cfg.tuning.trials} trials of "
                          f"{trial_length(cfg)}, TPE, median pruning) on the validation split.")
    def tuned_hparams(context: dg.AssetExecutionContext, config: TuneRunConfig) -> dg.Output[TunedHparams]:
        """Run (or resume) the study of the chosen data version; its best values go to the record."""
        from mlassets.core.data.version_keys import resolve_key
        from mlassets.core.tune.study import tune_version

        key = chosen_version(context.instance.get_dynamic_partitions(data_versions(cfg).name),
                             config.data_version, cfg.dataset.name)
        store = context.resources.store.open()
        version = resolve_key(store, cfg, key)
        with tempfile.TemporaryDirectory(prefix="tune-", dir=paths.work_dir(cfg.dataset.name, "tune")) as tmp:
            tuned = tune_version(store, cfg, version, Path(tmp), trials=config.trials or None, log=context.log.info)
        return dg.Output(tuned, metadata=_metadata(tuned))

    return [tuned_hparams]


def jobs(cfg: PipelineConfig, keys: DatasetKeys) -> list:  # define_asset_job's (unresolved) jobs
    return [dg.define_asset_job(tune_job_name(cfg), selection=[keys.tuned_hparams], executor_def=dg.in_process_executor,
                                description="An Optuna study on the newest data version's validation split.")]


def automation(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.SensorDefinition | dg.ScheduleDefinition]:
    if not cfg.tuning.schedule:
        return []
    versions = data_versions(cfg)

    @dg.schedule(name=f"{cfg.dataset.name}_tune_schedule", job_name=tune_job_name(cfg),
                 cron_schedule=cfg.tuning.schedule, execution_timezone=cfg.automation.timezone,
                 default_status=dg.DefaultScheduleStatus.RUNNING, description="A study on the newest data version.")
    def tune(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        if not context.instance.get_dynamic_partitions(versions.name):
            return dg.SkipReason(f"{cfg.dataset.name} has no data version yet")
        return dg.RunRequest(run_key=f"tune:{context.scheduled_execution_time.isoformat()}")

    return [tune]
