"""A Dagster run's lease, with a real daemon, code server and instance, and one fake GPU slot on the CPU (the `gpu`
pool holds one training step), on a fleet whose lease lasts 8 s and is renewed every second: the training rank of a
running run is frozen with SIGSTOP after its first checkpoint; its heartbeats stop, the fleet sensor takes the lease
(tag ``mlassets/lease_lost``), Dagster terminates the run, the frozen rank is SIGKILLed after the grace period, the
run ends canceled (no failure alert) and its `gpu` slot is free; a requeued run takes the slot and resumes from the
frozen run's last checkpoint (the work lost is the steps since it) and succeeds."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from pathlib import Path

import dagster as dg
import psutil
import pytest
import yaml
from dagster._core.utils import make_new_run_id

from mlassets.cli import daemon
from mlassets.core.config import PipelineConfig, load_config
from mlassets.core.fleet import heartbeat as hb
from mlassets.core.fleet.config import FLEET_ENV, SHIPPED, load_fleet
from mlassets.core.fleet.service import fleet_table
from mlassets.defs.alerts import alerts_log
from mlassets.defs.fleet.leases import watch_leases
from mlassets.defs.fleet.runs import LEASE_LOST_TAG, OVERRUN_TAG, OVERRUN_WARNED_TAG, RESUME_TAG
from mlassets.defs.fleet.view import fleet_view
from mlassets.host.instance import get_instance
from mlassets.host.runs import ingest
from tests.daemon_wait import until
from tests.defs.test_dagster_preemption import _checkpoints, _meta, _spec, _status, _submit, slow_sales

pytestmark = pytest.mark.e2e
DEADLINE_S = 600  # a limit for a slow machine, not an expectation: each wait returns as soon as it is met


@pytest.fixture
def cfg(home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PipelineConfig:
    # some 15 s of training: the rank is frozen at its first checkpoint (step 5 of 52), the requeued run trains the rest
    config_path = slow_sales(tmp_path, monkeypatch, epochs=2)
    fleet = yaml.safe_load(SHIPPED.read_text())
    fleet.update({"lease": {"seconds": 8, "heartbeat_s": 1, "startup_s": 60}, "grace_s": 3})
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet, allow_unicode=True))
    monkeypatch.setenv(FLEET_ENV, str(tmp_path / "fleet.yaml"))
    return load_config(config_path)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_frozen_rank_loses_the_lease_and_its_run_resumes_from_the_last_checkpoint(cfg, tmp_path) -> None:
    assert load_fleet().lease.seconds == 8
    instance = get_instance()
    version = ingest(instance, cfg, "2024-01").key
    log = tmp_path / "daemon.log"
    with log.open("w") as out:
        proc = daemon.start(out)
    rank = 0
    try:
        run_id = _submit(instance, version, _spec("research", "batch", True))
        until("the run's first checkpoint", lambda: bool(_checkpoints(run_id)), proc, log, DEADLINE_S)
        (beat,) = fleet_table().heartbeats(hb.run_lease(run_id))  # one rank renews the run's lease
        rank = beat["pid"]
        os.kill(rank, signal.SIGSTOP)  # frozen: no more steps, checkpoints or heartbeats; SIGINT/SIGTERM wait
        last_checkpoint = max(int(p.name.split("-")[-1]) for p in _checkpoints(run_id))
        until("the run canceled", lambda: _status(instance, run_id) == dg.DagsterRunStatus.CANCELED, proc, log,
              DEADLINE_S)
        stopped = instance.get_run_by_id(run_id)
        assert not _alive(rank)  # killed by its step after the grace period, before the run ended
        claims = instance.event_log_storage.get_concurrency_info("gpu").claimed_slots
        assert run_id not in {c.run_id for c in claims}  # its slot is free
        requeued: list[dg.DagsterRun] = []

        def resumed_done() -> bool:
            requeued[:] = instance.get_runs(dg.RunsFilter(tags={RESUME_TAG: run_id}))
            return bool(requeued) and requeued[0].status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)

        until("the requeued run to finish", resumed_done, proc, log, DEADLINE_S)
    finally:
        if rank and _alive(rank):
            os.kill(rank, signal.SIGKILL)
        daemon.stop(proc)

    assert stopped.tags[LEASE_LOST_TAG].startswith("lease lost: no heartbeat for ")
    assert "(lease 8 s); requeued to resume from its last checkpoint" in stopped.tags[LEASE_LOST_TAG]
    assert requeued[0].status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-3000:]
    assert requeued[0].tags["mlassets/trigger"] == "requeue" and LEASE_LOST_TAG not in requeued[0].tags
    checkpoints = _meta(instance, requeued[0].run_id, "sales/checkpoints")
    assert checkpoints["resumed_from_step"] == last_checkpoint > 0  # lost: only the steps since that checkpoint
    assert fleet_table().heartbeats(hb.run_lease(run_id)) == []  # the lease is gone with its ranks
    view = fleet_view(fleet_table(), load_fleet(), instance)  # what `mlassets fleet` shows of it
    (event,) = [e for e in view.events if e["job_id"] == hb.run_lease(run_id)]  # recorded as its step stopped
    assert (event["ref"], event["kind"]) == (f"dagster run {run_id[:8]}", "lease-lost")
    assert isinstance(event["lost_steps"], int) and event["lost_steps"] >= 0  # the steps since its last checkpoint
    (row,) = [j for j in view.jobs if j["id"] == run_id]
    assert row["state"] == "stopped" and row["reason"].endswith(f"requeued as dagster run {requeued[0].run_id[:8]}")
    alerts = Path(alerts_log())
    assert not alerts.exists() or run_id not in alerts.read_text()  # a lost lease, requeued: no failure alert


def _started(instance: dg.DagsterInstance, spec_minutes: float, at: float) -> dg.DagsterRun:
    """A pipeline run of the sales job, started at ``at`` (its RUN_START event), with a job spec."""
    spec = dataclasses.replace(_spec("research", "batch", True), expected_minutes=spec_minutes)
    run = instance.add_run(dg.DagsterRun(job_name="sales_pipeline", run_id=make_new_run_id(),
                                         status=dg.DagsterRunStatus.NOT_STARTED, tags=spec.tags(load_fleet(SHIPPED))))
    instance.report_dagster_event(dg.DagsterEvent(event_type_value="PIPELINE_START", job_name="sales_pipeline"),
                                  run.run_id, timestamp=at)
    return instance.get_run_by_id(run.run_id)


def test_leases_and_overruns_of_running_runs(home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sensor's watch on a real instance (only its launcher's terminate is recorded): a run whose rank last beat
    past the lease is stopped as lease lost, one that beats is left alone, one without heartbeats is not judged; a
    run past its expected runtime is warned once, then stopped as overrun past overrun_factor times it."""
    fleet, now = load_fleet(SHIPPED), time.time()
    with dg.instance_for_test() as instance:
        stopped: list[str] = []
        monkeypatch.setattr(instance.run_launcher, "terminate", stopped.append)
        frozen, beating, silent = (_started(instance, 60.0, now - 120) for _ in range(3))
        table = fleet_table()
        table.heartbeat(hb.run_lease(frozen.run_id), 0, step=40, checkpoint_step=35, now=now - 1900)
        table.heartbeat(hb.run_lease(beating.run_id), 0, step=40, checkpoint_step=35, now=now - 20)
        lines = watch_leases(instance, fleet, "sales_pipeline", now=now)
        assert stopped == [frozen.run_id] and len(lines) == 1
        assert instance.get_run_by_id(frozen.run_id).tags[LEASE_LOST_TAG] == (
            "lease lost: no heartbeat for 1900 s (lease 1800 s); requeued to resume from its last checkpoint")
        assert not watch_leases(instance, fleet, "sales_pipeline", now=now)  # being stopped: not again
        assert LEASE_LOST_TAG not in instance.get_run_by_id(silent.run_id).tags

        stopped.clear()
        long = _started(instance, 10.0, now - 11 * 60)  # past its 10 min
        watch_leases(instance, fleet, "sales_pipeline", now=now)
        assert OVERRUN_WARNED_TAG in instance.get_run_by_id(long.run_id).tags and not stopped
        assert not watch_leases(instance, fleet, "sales_pipeline", now=now + 60)  # warned once
        watch_leases(instance, fleet, "sales_pipeline", now=now + 5 * 60)  # 16 min > 1.5 x 10 min
        assert stopped == [long.run_id]
        assert instance.get_run_by_id(long.run_id).tags[OVERRUN_TAG].startswith("overrun: ran 16.0 min, 1.5x")
