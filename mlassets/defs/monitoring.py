"""group monitoring: drift of each data version against the champion's training data (and a retrain when it
drifted), and the champion's decay with age. Neither needs training: the monitor job runs snapshot and drift alone.
"""

import math

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.snapshot import Snapshot
from mlassets.core.monitor.decay import DecayReport
from mlassets.core.monitor.drift import DriftReport
from mlassets.core.records import RecordError, read_record_file
from mlassets.defs.automation import has_run, version_tags
from mlassets.defs.jobs import TRIGGER_TAG, monitor_job_name, pipeline_job_name
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions

RETRAIN_REASON = "mlassets/retrain_reason"  # a drift-started run: the first reason of the drift report
SHOWN_REASONS = 20  # reasons listed in the metadata; the record holds all


def drift_sensor_name(cfg: PipelineConfig) -> str:
    return f"{cfg.dataset.name}_drift_retrain"


def _shown(value: object) -> object:
    """Numbers for display: 4 significant digits (p-values stay readable), NaN as empty."""
    if isinstance(value, float):
        return None if math.isnan(value) else float(f"{value:.4g}")
    return value


def rows_table(records: list[dict], columns: dict[str, str]) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[dg.TableRecord({c: _shown(r.get(c)) for c in columns}) for r in records],
        schema=dg.TableSchema(columns=[dg.TableColumn(c, kind) for c, kind in columns.items()]))


def _bullets(lines: list[str], empty: str) -> dg.MetadataValue:
    shown = [f"- {line}" for line in lines[:SHOWN_REASONS]]
    if len(lines) > SHOWN_REASONS:
        shown.append(f"- ... and {len(lines) - SHOWN_REASONS} more (in the record)")
    return dg.MetadataValue.md("\n".join(shown) or empty)


def drift_metadata(report: DriftReport) -> dict[str, object]:
    columns = {"scope": "string", "feature": "string", "statistic": "string", "value": "float", "threshold": "float",
               "drifted": "bool", "new_rows": "int", "reference_rows": "int"}
    return {
        "drifted": report.drifted,
        "reasons": _bullets(report.reasons, report.note or "no drift"),
        "rows": rows_table([r.to_dict() for r in report.rows], columns),
        "champion_version": report.champion_version or "none",
        "reference_data_version": report.reference_data_version or "none",
        "new_partitions": ", ".join(report.new_partitions),
        "new_rows": dg.MetadataValue.int(report.new_rows),
        "reference_rows": dg.MetadataValue.int(report.reference_rows),
        "skipped": _bullets(report.skipped, "none"),
    }


def decay_metadata(report: DecayReport) -> dict[str, object]:
    columns = {"model_version": "string", "data_version": "string", "age": "float", "metric": "float",
               "change": "float", "within": "bool"}
    meta: dict[str, object] = {
        "recommendation": report.recommendation,
        "points": rows_table([p.to_dict() for p in report.points], columns),
        "metric": report.metric, "age_unit": report.age_unit,
    }
    if report.cadence is not None:
        meta["cadence"] = dg.MetadataValue.float(round(report.cadence, 1))
    return meta


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    @dg.asset(key=keys.drift_report, partitions_def=data_versions(cfg), group_name="monitoring",
              ins={"snapshot": dg.AssetIn(keys.snapshot)}, required_resource_keys={"store", "mlflow"})
    def drift_report(context: dg.AssetExecutionContext, snapshot: Snapshot) -> dg.Output[DriftReport]:
        """The rows this version adds against the champion's training rows: PSI per feature and a KS test on the
        target, overall and per slice value; one sentence per drifted statistic. Needs no training."""
        from mlassets.core.monitor.reference import version_drift

        report = version_drift(context.resources.store.open(), cfg, snapshot.commit, snapshot.new_partitions)
        for reason in report.reasons[:SHOWN_REASONS]:
            context.log.warning(f"drift: {reason}")
        return dg.Output(report, metadata=drift_metadata(report))

    @dg.asset(key=keys.decay, group_name="monitoring", deps=[keys.evaluation, keys.registered_model],
              required_resource_keys={"store", "io_manager"})
    def decay(context: dg.AssetExecutionContext) -> dg.Output[DecayReport]:
        """Each champion's main metric against its age (from every evaluation that scored it on a later version),
        and how often to retrain so that it stays within monitoring.decay_tolerance."""
        from mlassets.core.monitor.history import dataset_decay

        files = context.resources.io_manager.files()
        report = dataset_decay(files, context.resources.store.open(), cfg, keys.evaluation.path,
                               keys.registered_model.path)
        return dg.Output(report, metadata=decay_metadata(report))

    return [drift_report, decay]


def jobs(cfg: PipelineConfig, keys: DatasetKeys) -> list:
    return [dg.define_asset_job(
        monitor_job_name(cfg), selection=[keys.snapshot, keys.drift_report], partitions_def=data_versions(cfg),
        executor_def=dg.in_process_executor,
        description="snapshot -> drift report, without training (automation.on_new_data: false)",
    )]


def _report(materialization: dg.AssetMaterialization) -> DriftReport | None:
    """The record a drift materialization stored (its IO manager names the file in the metadata)."""
    path = materialization.metadata.get("record")
    if path is None:
        return None
    try:
        return read_record_file(str(path.value), DriftReport)
    except (OSError, RecordError):
        return None


def automation(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.SensorDefinition | dg.ScheduleDefinition]:
    return [drift_retrain(cfg, keys)]


def drift_retrain(cfg: PipelineConfig, keys: DatasetKeys) -> dg.SensorDefinition:
    pipeline = pipeline_job_name(cfg)
    status = dg.DefaultSensorStatus.RUNNING if cfg.monitoring.retrain_on_drift else dg.DefaultSensorStatus.STOPPED

    @dg.sensor(name=drift_sensor_name(cfg), job_name=pipeline, default_status=status,
               minimum_interval_seconds=cfg.automation.sensor_interval_s)
    def drift_retrain_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        """Retrains a data version whose drift report drifted, once, unless a pipeline run of it exists; the run
        is tagged with the first reason. The cursor is the last drift materialization looked at."""
        after = int(context.cursor) if context.cursor else None
        records = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=keys.drift_report, after_storage_id=after), limit=100, ascending=True,
        ).records
        requests = []
        for record in records:
            version = record.partition_key
            report = _report(record.asset_materialization)
            if report is None:
                context.log.warning(f"drift report of {version}: its record is unreadable; not retrained")
                continue
            if not report.drifted or not version:
                continue
            if has_run(context.instance, pipeline, version):
                continue
            requests.append(dg.RunRequest(run_key=f"drift:{version}", partition_key=version,
                                          tags={TRIGGER_TAG: "drift", RETRAIN_REASON: report.reasons[0][:250],
                                                **version_tags(cfg, version)}))
        cursor = str(records[-1].storage_id) if records else context.cursor
        if requests:
            return dg.SensorResult(run_requests=requests, cursor=cursor)
        return dg.SensorResult(skip_reason=f"no drifted version without a {pipeline} run", cursor=cursor)

    return drift_retrain_sensor
