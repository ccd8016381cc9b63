"""Every training run passes the fleet's admission before anything runs, on a real instance: `mlassets run` refused
(one sentence with the numbers; no Dagster run, no MLflow run), the new-data sensor and the retrain schedule
skipping a refused run with its sentence, the launcher cancelling a refused run however it was submitted, and
an admitted run that finds the GPUs taken told its position and what it waits for."""

from __future__ import annotations

import datetime
from pathlib import Path

import dagster as dg
import mlflow
import pytest
import yaml
from dagster._core.launcher import LaunchRunContext
from dagster._core.utils import make_new_run_id

from mlassets.cli import main
from mlassets.core.config import PipelineConfig, load_config
from mlassets.core.data.raw import WATCHED_BRANCH, raw_repo
from mlassets.core.data.store import open_store
from mlassets.core.fleet.config import SHIPPED, load_fleet
from mlassets.core.fleet.spec import JobSpec
from mlassets.defs.automation import automation
from mlassets.defs.fleet.admission import REFUSED_TAG, waiting
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.resources import StoreResource
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance
from mlassets.host.run_origin import job_origin

OVER_BUDGET = ("refused: the job costs ₹2,500 (1 GPUs x 10 h x ₹250 per GPU-hour, spot-first); team product has "
               "₹0 spent or reserved of its ₹1,000 budget")


def _config(tmp_path: Path, **fleet: object) -> Path:
    config = write_example(tmp_path / "sales", months=2)
    data = yaml.safe_load(config.read_text())
    data["fleet"] = {"team": "product", **fleet}
    data["training"]["checkpoint_every_minutes"] = 10.0
    config.write_text(yaml.safe_dump(data))
    return config


def _spec(team: str = "product", priority: str = "batch", ranks: int = 1, minutes: float = 180.0) -> JobSpec:
    return JobSpec(team=team, priority=priority, ranks=ranks, gpus_per_rank=1, expected_minutes=minutes,
                   capacity="spot-first", preemptible=True, checkpoint_every_minutes=10.0)


def _run(instance: dg.DagsterInstance, spec: JobSpec, status: dg.DagsterRunStatus) -> dg.DagsterRun:
    return instance.add_run(dg.DagsterRun(job_name="sales_pipeline", run_id=make_new_run_id(), status=status,
                                          tags=spec.tags(load_fleet(SHIPPED)),
                                          remote_job_origin=job_origin("here", "__repository__", "sales_pipeline")))


def _mlflow_runs() -> int:
    return len(mlflow.search_runs(search_all_experiments=True, output_format="list"))


def test_mlassets_run_over_budget_is_refused_with_the_numbers_and_starts_nothing(home: str, tmp_path: Path,
                                                                                 capsys) -> None:
    from mlassets.host.runs import ingest

    config = _config(tmp_path, expected_minutes=600.0)
    cfg = load_config(config)
    instance = get_instance()
    ingest(instance, cfg, cfg.dataset.partitions.keys[0])
    before = _mlflow_runs()
    capsys.readouterr()
    assert main(["run", "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip() == f"mlassets run: {OVER_BUDGET}; nothing started"
    assert instance.get_runs_count(dg.RunsFilter(job_name="sales_pipeline")) == 0
    assert _mlflow_runs() == before


def test_a_long_job_without_checkpoints_is_refused_by_mlassets_run(home: str, tmp_path: Path, capsys) -> None:
    from mlassets.host.runs import ingest

    config = _config(tmp_path, expected_minutes=120.0)
    data = yaml.safe_load(config.read_text())
    data["training"]["checkpoint_every_minutes"] = 0
    config.write_text(yaml.safe_dump(data))
    cfg = load_config(config)
    instance = get_instance()
    ingest(instance, cfg, cfg.dataset.partitions.keys[0])
    capsys.readouterr()
    assert main(["run", "--config", str(config)]) == 2
    assert "refused: the job is expected to run 120 min, over the 60 min above which checkpoints are mandatory" \
        in capsys.readouterr().err
    assert instance.get_runs_count(dg.RunsFilter(job_name="sales_pipeline")) == 0


@pytest.fixture
def cfg(home: str, tmp_path: Path) -> PipelineConfig:  # ₹750 a run: product's ₹1,000 budget holds one at a time
    config = _config(tmp_path, expected_minutes=180.0)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"schedule": "0 3 * * 1"}
    config.write_text(yaml.safe_dump(data))
    return load_config(config)


def test_the_sensor_requests_what_the_budget_admits_and_logs_the_rest(cfg: PipelineConfig) -> None:
    sensor = {d.name: d for d in automation(cfg, DatasetKeys.of(cfg))}["sales_new_data"]
    instance, store = get_instance(), open_store()
    store.create_repo(raw_repo(cfg), default_branch=WATCHED_BRANCH)
    store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-01.parquet": b"1"}, "Ingest", {"partition": "2024-01"})
    store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-02.parquet": b"2"}, "Ingest", {"partition": "2024-02"})
    with dg.build_sensor_context(instance=instance, cursor=None, resources={"store": StoreResource()}) as context:
        result = sensor(context)
    assert [r.partition_key[:7] for r in result.run_requests] == ["2024-01"]  # the second is over the budget
    assert result.run_requests[0].tags["mlassets/team"] == "product"
    _run(instance, _spec(), dg.DagsterRunStatus.STARTED)  # that run, running: ₹750 reserved
    _run(instance, _spec(), dg.DagsterRunStatus.QUEUED)  # and one more queued: ₹1,500 of ₹1,000
    store.commit(raw_repo(cfg), WATCHED_BRANCH, {"raw/sales/2024-03.parquet": b"3"}, "Ingest", {"partition": "2024-03"})
    with dg.build_sensor_context(instance=instance, cursor=result.cursor, resources={"store": StoreResource()}) as ctx:
        skipped = sensor(ctx)  # not a crash: a skip with the sentence
    assert skipped.run_requests == []
    assert skipped.skip_reason.skip_message.startswith("refused: the job costs ₹750 (1 GPUs x 3 h x ₹250 per "
                                                       "GPU-hour, spot-first); team product has ₹1,500 spent or "
                                                       "reserved of its ₹1,000 budget")


def test_the_schedule_skips_a_refused_retrain_with_its_sentence(cfg: PipelineConfig) -> None:
    schedule = {d.name: d for d in automation(cfg, DatasetKeys.of(cfg))}["sales_retrain"]
    instance = get_instance()
    instance.add_dynamic_partitions("sales_data_versions", ["a" * 64])
    when = datetime.datetime(2024, 4, 1, 3, tzinfo=datetime.UTC)
    request = schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert isinstance(request, dg.RunRequest)
    _run(instance, _spec(ranks=2, minutes=60.0), dg.DagsterRunStatus.STARTED)  # ₹500 reserved: ₹750 more is over
    skipped = schedule(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert isinstance(skipped, dg.SkipReason)
    assert "has ₹500 spent or reserved of its ₹1,000 budget" in skipped.skip_message


def test_the_launcher_cancels_a_refused_run_however_it_was_submitted(home: str) -> None:
    instance = get_instance()
    _run(instance, _spec(), dg.DagsterRunStatus.STARTED)  # ₹750 of product's ₹1,000
    over = _run(instance, _spec(), dg.DagsterRunStatus.NOT_STARTED)  # a UI launch of the same spec
    instance.run_launcher.launch_run(LaunchRunContext(dagster_run=over, workspace=None))
    after = instance.get_run_by_id(over.run_id)
    assert after.status == dg.DagsterRunStatus.CANCELED
    assert after.tags[REFUSED_TAG].startswith("refused: the job costs ₹750") and "has ₹750 spent or reserved" in \
        after.tags[REFUSED_TAG]
    fits = _run(instance, _spec(minutes=30.0), dg.DagsterRunStatus.NOT_STARTED)  # ₹125 more fits
    with pytest.raises(Exception, match="requires a workspace"):  # admitted: it reaches the launch itself
        instance.run_launcher.launch_run(LaunchRunContext(dagster_run=fits, workspace=None))
    assert REFUSED_TAG not in instance.get_run_by_id(fits.run_id).tags


def test_an_admitted_run_without_free_gpus_is_told_its_position_and_what_it_waits_for(home: str) -> None:
    instance, fleet = get_instance(), load_fleet(SHIPPED)
    assert waiting(instance, _spec(), fleet) == ""  # an empty fleet
    _run(instance, _spec("research", ranks=2), dg.DagsterRunStatus.STARTED)
    assert waiting(instance, _spec(), fleet) == ""  # 2 of 4 GPUs free
    _run(instance, _spec("research", ranks=2), dg.DagsterRunStatus.STARTED)
    assert waiting(instance, _spec(), fleet) == ("waits at position 1 in the queue for 1 free GPUs of capacity "
                                                 "spot-first (0 of 4 free)")
    _run(instance, _spec("product", "urgent"), dg.DagsterRunStatus.QUEUED)  # an urgent run queued before it
    assert waiting(instance, _spec(), fleet).startswith("waits at position 2 in the queue")
    assert waiting(instance, _spec("default"), fleet).startswith("waits at position 2")
    _run(instance, _spec("default"), dg.DagsterRunStatus.STARTED)  # default's quota is 1 GPU
    assert waiting(instance, _spec("default"), fleet).endswith("for 1 GPUs of team default's quota (it uses 1 of 1)")
