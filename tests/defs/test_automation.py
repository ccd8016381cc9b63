"""The sensors and the schedule evaluated directly, with a real instance and a real store: what they request,
that nothing is requested twice, that a restarted cursor continues, and that a failed run alerts its owners."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import yaml

from mlassets.core.config import PipelineConfig, load_config
from mlassets.core.data.raw import WATCHED_BRANCH, raw_repo
from mlassets.core.data.store import open_store
from mlassets.defs.alerts import alerts_log, failure_sensor
from mlassets.defs.automation import automation
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.resources import StoreResource
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance

SETTLE_S = 1


@pytest.fixture
def cfg(home: str, tmp_path: Path) -> PipelineConfig:
    config = write_example(tmp_path / "sales", months=3)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"landing": "landing", "landing_settle_s": SETTLE_S, "schedule": "0 3 * * 1",
                          "retrain": "warm_start", "full_retrain_every": 2, "owners": ["ana@example.com"]}
    config.write_text(yaml.safe_dump(data))
    return load_config(config)


def _defs(cfg: PipelineConfig) -> dict[str, dg.SensorDefinition | dg.ScheduleDefinition]:
    return {d.name: d for d in automation(cfg, DatasetKeys.of(cfg))}


def _tick(sensor: dg.SensorDefinition, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources={"store": StoreResource()}) as context:
        return sensor(context)


def test_each_new_commit_becomes_a_data_version_and_one_run_in_order(cfg: PipelineConfig) -> None:
    sensor, instance, store = _defs(cfg)["sales_new_data"], get_instance(), open_store()
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING and sensor.job_name == "sales_pipeline"
    assert _tick(sensor, instance, None).run_requests == []  # no repository yet
    store.create_repo(raw_repo(cfg), default_branch=WATCHED_BRANCH)
    first = store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-01.parquet": b"1"}, "Ingest",
                         {"partition": "2024-01"}).id
    result = _tick(sensor, instance, None)
    key = f"2024-01.{first[:8]}"  # readable and sortable; the run key stays the commit id
    assert [(r.run_key, r.partition_key) for r in result.run_requests] == [(first, key)]
    assert result.run_requests[0].tags["mlassets/trigger"] == "new_data"
    assert result.run_requests[0].tags["mlassets/partitions"] == "2024-01"
    assert result.run_requests[0].tags["mlassets/version_name"] == f"2024-01 · {first[:8]}"
    assert result.run_requests[0].tags["mlassets/data_commit"] == first
    assert result.dynamic_partitions_requests[0].partition_keys == [key] and result.cursor == first
    assert _tick(sensor, instance, result.cursor).run_requests == []  # re-evaluation requests nothing
    second = store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-02.parquet": b"2"}, "Ingest").id
    third = store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-03.parquet": b"3"}, "Ingest").id
    restarted = _tick(sensor, instance, result.cursor)  # a new daemon: only the cursor is carried over
    assert [r.partition_key for r in restarted.run_requests] == [f"2024-02.{second[:8]}", f"2024-03.{third[:8]}"]
    assert restarted.cursor == third  # commits made outside mlassets are named by their diff


def test_without_on_new_data_a_commit_runs_the_drift_report_only(cfg: PipelineConfig) -> None:
    off = dataclasses.replace(cfg, automation=dataclasses.replace(cfg.automation, on_new_data=False))
    assert _defs(off)["sales_new_data"].job_name == "sales_monitor"


def _settled(sensor: dg.SensorDefinition, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    """Two ticks a settle interval apart: what the sensor does with deliveries left alone that long."""
    first = _tick(sensor, instance, cursor)
    time.sleep(SETTLE_S + 0.2)
    second = _tick(sensor, instance, first.cursor)
    return dg.SensorResult(run_requests=first.run_requests + second.run_requests, cursor=second.cursor,
                           dynamic_partitions_requests=first.dynamic_partitions_requests
                           + second.dynamic_partitions_requests)


def _ingest(cfg: PipelineConfig, instance: dg.DagsterInstance, request: dg.RunRequest):  # noqa: ANN202 - a Run
    """The ingest run a landing request starts, run here as the daemon would run it."""
    from mlassets.defs.jobs import ingest_job_name
    from mlassets.defs.partitions import raw_partitions
    from mlassets.host.runs import execute, register

    register(cfg)
    instance.add_dynamic_partitions(raw_partitions(cfg).name, [request.partition_key])
    return execute(instance, ingest_job_name(cfg), request.partition_key, request.run_config, tags=request.tags)


def test_a_delivery_is_ingested_once_when_whole_and_a_bad_name_is_only_logged(cfg: PipelineConfig,
                                                                             capsys: pytest.CaptureFixture) -> None:
    sensor, instance = _defs(cfg)["sales_landing"], get_instance()
    landing = Path(cfg.automation.landing)
    shutil.rmtree(landing)
    assert _tick(sensor, instance, None).run_requests == []  # no folder yet: nothing
    landing.mkdir()
    shutil.copy(Path(cfg.dataset.path.replace("{partition}", "2024-01")), landing / "2024-01.csv")
    (landing / "january.csv").write_text("x")
    assert _tick(sensor, instance, None).run_requests == []  # just seen: not yet unchanged for the settle interval
    result = _settled(sensor, instance, None)
    (request,) = result.run_requests
    assert request.partition_key == "2024-01" and request.tags["mlassets/trigger"] == "landing"
    digest = json.loads(result.cursor)["pending:2024-01"]  # what the ingest run checks before it reads
    assert request.run_config == {"ops": {"sales__raw_sales": {"config": {"delivered": str(landing / "2024-01.csv"),
                                                                          "delivered_sha256": digest}}}}
    assert result.dynamic_partitions_requests[0].partition_keys == ["2024-01"]
    assert _settled(sensor, instance, result.cursor).run_requests == []  # requested: not again while it runs
    assert _ingest(cfg, instance, request).success
    capsys.readouterr()
    ingested = _settled(sensor, instance, result.cursor)
    assert ingested.run_requests == []  # the same file: never again (nor retried)
    assert f"{landing / '2024-01.csv'} was ingested into partition 2024-01" in capsys.readouterr().err
    assert json.loads(ingested.cursor)["2024-01"] == digest
    frame = pd.read_csv(landing / "2024-01.csv", dtype=str)
    frame.loc[3, "units"] = "12.0"
    frame.to_csv(landing / "2024-01.csv", index=False)
    changed = _settled(sensor, instance, ingested.cursor)
    assert changed.run_requests == []  # changed after its ingest: not a new version unless the user says so
    said = [line for line in capsys.readouterr().err.splitlines() if "changed after partition 2024-01" in line]
    assert len(said) == 1 and f"--partition 2024-01 --from {landing / '2024-01.csv'}" in said[0]
    assert _settled(sensor, instance, changed.cursor).run_requests == []
    assert "changed after" not in capsys.readouterr().err  # said once
    assert "does not match" in json.loads(result.cursor)["ignored:january.csv"]  # said once, not at every tick


def test_a_half_written_delivery_is_never_read(cfg: PipelineConfig) -> None:
    """Issue 33 case 1: a file written in place (cut at 60 %, as a slow `cp` leaves it) is not ingested; once
    whole and unchanged for the settle interval it is, once, with the whole file's fingerprint."""
    sensor, instance = _defs(cfg)["sales_landing"], get_instance()
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    whole = Path(cfg.dataset.path.replace("{partition}", "2024-02")).read_bytes()
    target = landing / "2024-02.csv"
    target.write_bytes(whole[: int(len(whole) * 0.6)])
    first = _tick(sensor, instance, None)
    assert first.run_requests == []
    time.sleep(SETTLE_S / 2)
    with target.open("ab") as fh:  # the copy goes on, within the settle interval
        fh.write(whole[int(len(whole) * 0.6):])
    second = _tick(sensor, instance, first.cursor)
    assert second.run_requests == []  # it changed since it was seen: wait again
    time.sleep(SETTLE_S + 0.2)
    third = _tick(sensor, instance, second.cursor)
    assert [r.partition_key for r in third.run_requests] == ["2024-02"]
    assert json.loads(third.cursor)["pending:2024-02"] == hashlib.sha256(b"2024-02.csv\0" + whole).hexdigest()


def test_a_writer_that_stalls_past_the_settle_time_delivers_the_whole_file_once_it_settles(
        cfg: PipelineConfig, capsys: pytest.CaptureFixture) -> None:
    """A copy that stops longer than the settle interval is read while cut; its ingest run refuses it when the copy
    goes on. The sensor says it was not ingested (never that it was), and takes the whole file once it settles."""
    from mlassets.cli.versions import data_versions

    sensor, instance = _defs(cfg)["sales_landing"], get_instance()
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    whole = Path(cfg.dataset.path.replace("{partition}", "2024-02")).read_bytes()
    target = landing / "2024-02.csv"
    target.write_bytes(whole[: int(len(whole) * 0.6)])
    first = _settled(sensor, instance, None)  # the stall outlasted the settle interval: read while cut
    (cut,) = first.run_requests
    with target.open("ab") as fh:  # the copy goes on
        fh.write(whole[int(len(whole) * 0.6):])
    refused = _ingest(cfg, instance, cut)
    assert not refused.success and "changed after the landing sensor found it whole" in (refused.failure or "")
    capsys.readouterr()
    seen = _tick(sensor, instance, first.cursor)
    assert seen.run_requests == []  # changed since it was seen: wait a settle interval
    said = capsys.readouterr().err
    assert f"{target} was not ingested: run {refused.run_id[:8]} of partition 2024-02 failure" in said
    assert "was ingested" not in said and "changed after partition" not in said
    time.sleep(SETTLE_S + 0.2)
    again = _tick(sensor, instance, seen.cursor)
    (request,) = again.run_requests  # whole now: taken
    digest = hashlib.sha256(b"2024-02.csv\0" + whole).hexdigest()
    assert request.run_config["ops"]["sales__raw_sales"]["config"]["delivered_sha256"] == digest
    landed = _ingest(cfg, instance, request)
    assert landed.success, landed.failure
    done = _tick(sensor, instance, again.cursor)
    assert f"{target} was ingested into partition 2024-02 (run {landed.run_id[:8]})" in capsys.readouterr().err
    assert json.loads(done.cursor)["2024-02"] == digest and _settled(sensor, instance, done.cursor).run_requests == []
    (version,) = data_versions(cfg)
    assert version.partitions == ["2024-02"]


def test_a_refused_delivery_is_not_retried_until_it_changes(cfg: PipelineConfig) -> None:
    """Another dataset's CSV in the landing folder: its run refuses it, once; the same file is never requested
    again, and the alert names what is wrong (not an empty reason)."""
    sensor, instance = _defs(cfg)["sales_landing"], get_instance()
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    (landing / "2024-03.csv").write_text("order_id,city,distance_km\no1,paris,3.5\no2,rome,1.2\n")
    first = _settled(sensor, instance, None)
    (request,) = first.run_requests
    run = _ingest(cfg, instance, request)
    assert not run.success
    assert _settled(sensor, instance, first.cursor).run_requests == []  # refused: not asked again, unchanged
    (failed,) = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
    failure = next(e.dagster_event for e in instance.all_logs(failed.run_id) if e.dagster_event and
                   e.dagster_event.event_type == dg.DagsterEventType.RUN_FAILURE)
    context = dg.build_run_status_sensor_context(sensor_name="mlassets_run_failures", dagster_event=failure,
                                                 dagster_instance=instance, dagster_run=failed).for_run_failure()
    failure_sensor([cfg])(context)
    (line,) = [json.loads(x) for x in Path(alerts_log()).read_text().splitlines()]
    reason = line["reason"]
    assert reason.startswith("partition 2024-03 was not ingested: ") and "column" in reason, reason


def test_a_delivery_rewritten_after_the_sensor_found_it_whole_is_not_ingested(cfg: PipelineConfig) -> None:
    """Issue 33: between the sensor's decision and the ingest run's read, the file is rewritten in place; the run
    refuses it, naming the path and the command that makes it a version, and no data version is made."""
    from mlassets.cli.versions import data_versions
    from mlassets.defs.jobs import ingest_job_name
    from mlassets.defs.partitions import raw_partitions
    from mlassets.host.runs import execute, register

    sensor, instance = _defs(cfg)["sales_landing"], get_instance()
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    target = landing / "2024-01.csv"
    shutil.copy(Path(cfg.dataset.path.replace("{partition}", "2024-01")), target)
    (request,) = _settled(sensor, instance, None).run_requests
    frame = pd.read_csv(target, dtype=str)
    frame.loc[3, "units"] = "99"
    frame.to_csv(target, index=False)  # rewritten in place before the run reads it
    register(cfg)
    instance.add_dynamic_partitions(raw_partitions(cfg).name, ["2024-01"])
    run = execute(instance, ingest_job_name(cfg), "2024-01", request.run_config, tags=request.tags)
    assert not run.success
    assert f"{target} changed after the landing sensor found it whole" in (run.failure or "")
    assert "--partition 2024-01 --from" in (run.failure or "")
    assert data_versions(cfg) == [] and instance.get_dynamic_partitions(f"{cfg.dataset.name}_data_versions") == []


def test_the_schedule_retrains_the_newest_version_with_the_policy(cfg: PipelineConfig) -> None:
    schedule, instance = _defs(cfg)["sales_retrain"], get_instance()
    assert schedule.cron_schedule == "0 3 * * 1" and schedule.execution_timezone == "UTC"
    when = datetime.datetime(2024, 4, 1, 3, tzinfo=datetime.UTC)
    skipped = schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert isinstance(skipped, dg.SkipReason) and "no data version yet" in skipped.skip_message
    instance.add_dynamic_partitions("sales_data_versions", ["a" * 64, "b" * 64])
    request = schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert request.partition_key == "b" * 64 and request.tags["mlassets/trigger"] == "schedule"
    assert request.tags["mlassets/retrain"] == "full"  # no champion yet: nothing to start from
    assert request.run_key == f"retrain:{when.isoformat()}"


def test_a_failed_run_tells_the_owners_which_step_failed_and_why(cfg: PipelineConfig, monkeypatch) -> None:
    from mlassets.host.runs import IngestFailed, ingest

    monkeypatch.delenv("MLASSETS_ALERT_WEBHOOK", raising=False)
    instance = get_instance()
    bad = Path(cfg.dataset.path.replace("{partition}", "2024-01"))
    frame = pd.read_csv(bad, dtype=str)
    frame.loc[3, "units"] = "88 units"
    frame.to_csv(bad, index=False)
    with pytest.raises(IngestFailed):
        ingest(instance, cfg, "2024-01")
    (run,) = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
    failure = next(e.dagster_event for e in instance.all_logs(run.run_id) if e.dagster_event and
                   e.dagster_event.event_type == dg.DagsterEventType.RUN_FAILURE)
    context = dg.build_run_status_sensor_context(sensor_name="mlassets_run_failures", dagster_event=failure,
                                                 dagster_instance=instance, dagster_run=run).for_run_failure()
    failure_sensor([cfg])(context)
    (line,) = [json.loads(x) for x in Path(alerts_log()).read_text().splitlines()]
    assert line["owners"] == ["ana@example.com"] and line["step"] == "sales__raw_sales"
    assert "'units'" in line["reason"] and "88 units" in line["reason"] and line["run_id"] == run.run_id
    assert line["text"].startswith(f"run {run.run_id[:8]} of sales_ingest partition 2024-01 failed at sales__raw_sales")


def test_a_home_made_before_readable_keys_gets_no_second_run_of_its_old_versions(cfg: PipelineConfig) -> None:
    """Its versions are keyed by their full commit id: a sensor that lost its cursor requests none of them again,
    and a new commit on top gets a readable key."""
    sensor, instance, store = _defs(cfg)["sales_new_data"], get_instance(), open_store()
    store.create_repo(raw_repo(cfg), default_branch=WATCHED_BRANCH)
    old = store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-01.parquet": b"1"}, "Ingest",
                       {"partition": "2024-01"}).id
    root = store.log(raw_repo(cfg), WATCHED_BRANCH)[-1].id
    instance.add_dynamic_partitions("sales_data_versions", [root, old])  # as the old sensor added them
    new = store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-02.parquet": b"2"}, "Ingest",
                       {"partition": "2024-02"}).id
    result = _tick(sensor, instance, "f" * 40)  # a cursor not in the history: every commit is looked at
    assert [r.partition_key for r in result.run_requests] == [f"2024-02.{new[:8]}"]
    assert result.dynamic_partitions_requests[0].partition_keys == [f"2024-02.{new[:8]}"]


@pytest.mark.timeout(120)  # a FIFO opened for reading would block the tick: the test fails, never hangs
def test_a_link_out_of_the_landing_folder_or_a_fifo_is_refused_naming_its_path(cfg: PipelineConfig,
                                                                               capsys: pytest.CaptureFixture) -> None:
    """Issue 33 case 2: nothing outside the folder, and nothing that is not a file, is read or quoted."""
    sensor, instance = _defs(cfg)["sales_landing"], get_instance()
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    (landing / "2024-03.csv").symlink_to("/etc/passwd")
    os.mkfifo(landing / "2024-04.csv")
    capsys.readouterr()
    assert _settled(sensor, instance, None).run_requests == []
    err = capsys.readouterr().err
    assert f"{landing.resolve() / '2024-03.csv'} is a link that leaves the landing folder" in err
    assert f"{landing.resolve() / '2024-04.csv'} is a FIFO" in err
    assert "root:" not in err


def test_a_tick_that_finds_no_new_commit_keeps_its_cursor_and_reads_nothing_more(cfg: PipelineConfig,
                                                                                 monkeypatch) -> None:
    sensor, instance, store = _defs(cfg)["sales_new_data"], get_instance(), open_store()
    store.create_repo(raw_repo(cfg), default_branch=WATCHED_BRANCH)
    head = store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-01.parquet": b"1"}, "Ingest").id

    def unread(*_args, **_kwargs):
        raise AssertionError("a tick with nothing new read the instance's partitions or runs")

    monkeypatch.setattr(instance, "get_dynamic_partitions", unread)  # the usual tick, every few seconds
    monkeypatch.setattr(instance, "get_runs_count", unread)
    result = _tick(sensor, instance, head)
    assert result.run_requests == [] and result.cursor == head and not result.dynamic_partitions_requests
