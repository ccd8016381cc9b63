"""Drift and decay on a real embedded stack (small flights sample), and the drift sensor evaluated directly.

January trains the champion; February (as delivered by the source) runs the whole pipeline, so the champion is
also scored on a later holdout; March and April arrive with every flight's distance x1.5 and run only the monitor
job (snapshot + drift report). April already has a pipeline run (created, never started), so only March may be
retrained. Real months differ in the weather (wind speed PSI 0.29 from January to February at this sample), so the
test's PSI threshold (0.5) sits above that natural change and below the injected one (0.8 for March), and a slice
value is compared only with 2000 rows on both sides (none of February's against January's training rows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import partition_tables
from mlassets.core.monitor.decay import DecayReport
from mlassets.core.monitor.drift import DriftReport
from mlassets.core.records import RecordFiles
from mlassets.core.train.workfiles import exported_splits, size_of
from mlassets.definitions import build_definitions
from mlassets.defs.jobs import monitor_job_name, pipeline_job_name
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.monitoring import RETRAIN_REASON, drift_sensor_name
from mlassets.host.instance import get_instance
from mlassets.host.runs import QUIET, ingest, run_pipeline
from tests.conftest import small_flights

SHIFT = 1.5  # every flight's distance, clipped at the schema's maximum


def monitored(**monitoring: object) -> PipelineConfig:
    cfg = small_flights()
    settings = {"drift_psi": 0.5, "drift_min_rows": 2000, **monitoring}
    return dataclasses.replace(cfg, monitoring=dataclasses.replace(cfg.monitoring, **settings))


@dataclass
class Stack:
    cfg: PipelineConfig
    defs: dg.Definitions
    instance: dg.DagsterInstance
    versions: dict[str, str]  # month -> data-version partition key
    commits: dict[str, str]  # month -> its full commit id
    work: list[int] = dataclasses.field(default_factory=list)  # bytes under work/ after each pipeline run


def _shifted(cfg: PipelineConfig, month: str, folder: Path) -> str:
    folder.mkdir(parents=True)
    tables = partition_tables(cfg, month)
    flights = tables["flights"]
    tables["flights"] = flights.assign(distance=(flights["distance"] * SHIFT).clip(upper=6000.0))
    for name, frame in tables.items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    return str(folder)


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("monitor-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLASSETS_HOME", str(home))
        for var in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_CONFIGS", "MLASSETS_RECORDS"):
            mp.delenv(var, raising=False)
        cfg = monitored()
        defs, instance = build_definitions([cfg]), get_instance()
        versions, commits, work = {}, {}, []
        for month in ("2013-01", "2013-02"):
            ingested = ingest(instance, cfg, month)
            versions[month], commits[month] = ingested.key, ingested.data_version
            assert run_pipeline(instance, cfg, versions[month]).success
            work.append(size_of(home / "work"))
        monitor = defs.resolve_job_def(monitor_job_name(cfg))
        for month in ("2013-03", "2013-04"):
            ingested = ingest(instance, cfg, month, delivered=_shifted(cfg, month, home / month))
            versions[month], commits[month] = ingested.key, ingested.data_version
            run = monitor.execute_in_process(instance=instance, partition_key=versions[month], run_config=QUIET)
            assert run.success
        instance.create_run_for_job(defs.resolve_job_def(pipeline_job_name(cfg)),
                                    tags={"dagster/partition": versions["2013-04"]})  # queued elsewhere, say
        yield Stack(cfg, defs, instance, versions, commits, work)
        instance.dispose()


def _report(stack: Stack, month: str) -> DriftReport:
    key = DatasetKeys.of(stack.cfg).drift_report
    report = RecordFiles(paths.records_root()).read(key.path, stack.versions[month])
    assert isinstance(report, DriftReport)
    return report


def _tick(stack: Stack, cursor: str | None):
    """One evaluation of the drift sensor as the daemon makes it (partitions loaded from the instance)."""
    sensor = stack.defs.resolve_sensor_def(drift_sensor_name(stack.cfg))
    context = dg.build_sensor_context(instance=stack.instance, cursor=cursor, definitions=stack.defs)
    with dg.partition_loading_context(dynamic_partitions_store=stack.instance):
        return sensor.evaluate_tick(context)


@pytest.mark.e2e
def test_reports_compare_each_version_with_the_champions_training_rows(stack):
    first, unshifted, shifted, covered = (_report(stack, m) for m in ("2013-01", "2013-02", "2013-03", "2013-04"))
    assert first.champion_version is None and not first.drifted and "no champion" in first.note
    assert unshifted.champion_version == "1" and unshifted.reference_data_version == stack.commits["2013-01"]
    assert unshifted.new_partitions == ["2013-02"] and unshifted.rows and not unshifted.drifted
    assert {r.scope for r in unshifted.rows} == {"all"} and len(unshifted.skipped) > 10  # every slice value
    assert shifted.new_partitions == ["2013-03"] and shifted.drifted and covered.drifted
    assert shifted.reasons[0].startswith("feature distance: PSI ") and shifted.reasons[0].endswith("> 0.5 (all rows)")


@pytest.mark.e2e
def test_finished_runs_leave_no_copy_of_the_training_data(stack):
    work = paths.home() / "work"
    assert exported_splits(work) == [] and not list(work.glob("*/train/*/*/checkpoints"))
    runs = list(work.glob("*/train/*/*"))
    assert len(runs) == 2 and all((run / "telemetry").is_dir() for run in runs)  # what the dashboard reads stays
    print(f"work/ after each pipeline run: {stack.work} bytes")


@pytest.mark.e2e
def test_a_drifted_version_requests_one_retrain_tagged_with_the_reason(stack):
    data = _tick(stack, None)
    shifted = stack.versions["2013-03"]
    assert [(r.run_key, r.partition_key) for r in data.run_requests] == [(f"drift:{shifted}", shifted)]
    tags = data.run_requests[0].tags
    assert tags[RETRAIN_REASON] == _report(stack, "2013-03").reasons[0] and tags["mlassets/trigger"] == "drift"
    assert data.cursor  # the newest drift materialization seen


@pytest.mark.e2e
def test_reevaluation_requests_nothing_and_a_restart_continues_from_the_stored_cursor(stack):
    first = _tick(stack, None)
    again = _tick(stack, first.cursor)
    assert not again.run_requests and again.cursor == first.cursor
    records = stack.instance.fetch_materializations(DatasetKeys.of(stack.cfg).drift_report, limit=10,
                                                    ascending=True).records
    before_march = next(r.storage_id for r in records if r.partition_key == stack.versions["2013-02"])
    resumed = _tick(stack, str(before_march))  # a sensor that last looked before March's report
    assert [r.partition_key for r in resumed.run_requests] == [stack.versions["2013-03"]]
    assert resumed.cursor == first.cursor


@pytest.mark.e2e
def test_drift_metadata_shows_the_rows_and_reasons(stack):
    key = DatasetKeys.of(stack.cfg).drift_report
    record = stack.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[stack.versions["2013-03"]]), limit=1).records[0]
    meta = record.asset_materialization.metadata
    assert meta["drifted"].value is True and "feature distance: PSI" in meta["reasons"].value
    distance = next(r.data for r in meta["rows"].records if r.data["feature"] == "distance")
    assert distance["drifted"] is True and distance["value"] > 0.5 and distance["scope"] == "all"


@pytest.mark.e2e
def test_decay_reads_the_champions_evaluations(stack):
    keys = DatasetKeys.of(stack.cfg)
    job = stack.defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=stack.instance, asset_selection=[keys.decay], run_config=QUIET).success
    report = RecordFiles(paths.records_root()).read(keys.decay.path, None)
    assert isinstance(report, DecayReport) and report.age_unit == "days"
    ones = [(p.data_version, p.age) for p in report.points if p.model_version == "1"]
    assert ones == [(stack.commits["2013-01"], 0.0), (stack.commits["2013-02"], 28.0)]  # Jan 31 -> Feb 28
    assert report.recommendation.startswith("not enough data: 1 evaluation(s)")


def test_the_sensor_is_stopped_by_default_without_retrain_on_drift(home):
    on, off = (build_definitions([monitored(retrain_on_drift=flag)]) for flag in (True, False))
    name = drift_sensor_name(monitored())
    assert on.resolve_sensor_def(name).default_status == dg.DefaultSensorStatus.RUNNING
    assert off.resolve_sensor_def(name).default_status == dg.DefaultSensorStatus.STOPPED
    assert on.resolve_sensor_def(name).minimum_interval_seconds == monitored().automation.sensor_interval_s
    monitor = on.resolve_job_def(monitor_job_name(monitored()))
    assert {k.to_user_string() for k in monitor.asset_layer.executable_asset_keys} == {
        "flights/snapshot", "flights/drift_report"}


def test_the_sensor_reads_records_and_skips_an_unreadable_one(home, tmp_path):
    """Without training: drift materializations reported to an ephemeral instance, each naming its record file."""
    cfg = monitored()
    defs, keys = build_definitions([cfg]), DatasetKeys.of(cfg)
    instance = dg.DagsterInstance.ephemeral()
    drifted, calm, lost = ("a" * 40, "b" * 40, "c" * 40)
    instance.add_dynamic_partitions(f"{cfg.dataset.name}_data_versions", [drifted, calm, lost])
    files = RecordFiles(tmp_path / "records")
    for version, reasons in ((drifted, ["feature x: PSI 0.90 > 0.5 (all rows)"]), (calm, []), (lost, ["gone"])):
        report = DriftReport(data_version=version, new_partitions=["p"], champion_version="1",
                             reference_data_version="d" * 40, new_rows=1, reference_rows=1, rows=[],
                             drifted=bool(reasons), reasons=reasons)
        path = files.write(keys.drift_report.path, version, report)
        if version == lost:
            path.write_text("{not json")
        instance.report_runless_asset_event(dg.AssetMaterialization(
            asset_key=keys.drift_report, partition=version, metadata={"record": dg.MetadataValue.path(str(path))}))
    stack = Stack(cfg, defs, instance, {}, {})
    data = _tick(stack, None)
    assert [(r.partition_key, r.tags[RETRAIN_REASON]) for r in data.run_requests] == [
        (drifted, "feature x: PSI 0.90 > 0.5 (all rows)")]
    last = instance.fetch_materializations(keys.drift_report, limit=1).records[0].storage_id
    assert data.cursor == str(last)  # past the unreadable one: it is not retried every tick
