"""One daemon per home, no stuck runs, nothing twice (issue 22, cases 1 and 2, and the kill-9 loop): real daemon
trees on a temporary home (sensors every second, the run monitor every second), killed with SIGKILL.

- case 1: a second ``mlassets daemon`` or ``mlassets ui`` cannot take the home; SIGKILL of the supervisor alone
  during training ends its whole tree (no orphan ``dagster-daemon``), and after a restart the run was executed
  once more only as its retry: one model version for the data version, one run per run key.
- case 2: SIGKILL of the whole tree during training; after a restart the run is marked failed, its owners are
  told, its retry resumes training from the newest checkpoint, and the run queued behind it runs.
- the loop: kills at random moments (4 in the suite, 10 in `make soak`) across ingests and runs, then a restart:
  every landed file trained once, in order, no duplicate model version, no run left in progress.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import mlflow
import pytest
import yaml

from mlassets.cli import daemon, main
from mlassets.cli.versions import data_versions
from mlassets.core import tracking
from mlassets.core.config import CONFIGS_ENV, PipelineConfig, load_config
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance, prepare_home
from tests.daemon_wait import until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
KILLS = int(os.environ.get("MLASSETS_KILLS", "4"))  # 4 in the suite, 10 in `make soak`
DEADLINE_S = 420  # a limit for a slow machine, not an expectation: each wait returns as soon as it is met
OPEN = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING,
        dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, months: int, slow_loader_ms: float) -> PipelineConfig:
    config = write_example(tmp_path / "sales", months=months)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"landing": "landing", "sensor_interval_s": 1, "landing_settle_s": 1}
    data["training"].update({"epochs": 3, "checkpoint_every_steps": 3, "faults": {"slow_loader_ms": slow_loader_ms}})
    data["gate"]["latency_p99_ms"] = 10_000  # a loaded test machine must not decide the gate
    config.write_text(yaml.safe_dump(data))
    monkeypatch.setenv(CONFIGS_ENV, str(config))
    monkeypatch.setenv("MLASSETS_RUN_MONITOR_S", "1")
    return load_config(config)


def _drop(cfg: PipelineConfig, month: str) -> None:
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    shutil.copy(cfg.dataset.path.replace("{partition}", month), landing / f".{month}.csv.tmp")
    (landing / f".{month}.csv.tmp").rename(landing / f"{month}.csv")


def _runs(instance: dg.DagsterInstance, job: str, *statuses: dg.DagsterRunStatus) -> list[dg.DagsterRun]:
    return instance.get_runs(dg.RunsFilter(job_name=job, statuses=list(statuses) or None))


def _ready(log: Path) -> bool:
    return "Checking for new runs for sensor" in log.read_text()  # Dagster's sensor daemon at work


def _start(log: Path) -> subprocess.Popen:
    with log.open("a") as out:
        return daemon.start(out)


def _wait_training(instance: dg.DagsterInstance, proc: subprocess.Popen, log: Path) -> dg.DagsterRun:
    found: list[dg.DagsterRun] = []
    until("training with a checkpoint", lambda: bool(run := _training(instance)) and not found.append(run), proc,
          log, DEADLINE_S)
    return found[0]


def _training(instance: dg.DagsterInstance) -> dg.DagsterRun | None:
    """The pipeline run whose training has written a checkpoint, if one runs now."""
    for run in _runs(instance, "sales_pipeline", dg.DagsterRunStatus.STARTED):
        root = (run.root_run_id or run.run_id)[:8]
        if any((p / "meta.json").is_file() for p in Path(os.environ["MLASSETS_HOME"]).glob(
                f"work/sales/train/*/{root}/checkpoints/step-*")):
            return run
    return None


def _decided(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """Pipeline runs that reached the gate's decision: succeeded, or failed because the gate rejected."""
    out = _runs(instance, "sales_pipeline", dg.DagsterRunStatus.SUCCESS)
    for run in _runs(instance, "sales_pipeline", dg.DagsterRunStatus.FAILURE):
        checks = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
        if any(c.event_log_entry.dagster_event.event_specific_data.check_name == "gate_passed" for c in checks):
            out.append(run)
    return out


def _settled(instance: dg.DagsterInstance, cfg: PipelineConfig, versions: int) -> bool:
    done = {r.tags["dagster/partition"] for r in _decided(instance)}
    return len(data_versions(cfg)) == versions and len(done) == versions and not instance.get_runs(
        dg.RunsFilter(statuses=OPEN))


def _model_versions(cfg: PipelineConfig) -> list[str]:
    """The data commit of every registered version of the dataset's model."""
    tracking.configure()
    found = mlflow.MlflowClient().search_model_versions(f"name = '{cfg.model.registered_name}'")
    return [v.tags["data_commit"] for v in found]


def _once_each(instance: dg.DagsterInstance, cfg: PipelineConfig, versions: int) -> list[dg.DagsterRun]:
    """What must hold after any number of kills: every version trained once (one run reached its gate's decision),
    in commit order, one model version each, one run per run key (retries aside), nothing left in progress. The
    deciding pipeline runs, in order."""
    landed = data_versions(cfg)
    keys, commits = [v.version for v in landed], [v.commit for v in landed]
    assert len(keys) == versions
    done = _decided(instance)
    done.sort(key=lambda r: instance.get_run_record_by_id(r.run_id).start_time)
    assert [r.tags["dagster/partition"] for r in done] == keys  # once each, in the order they landed
    assert sorted(_model_versions(cfg)) == sorted(commits)  # one model version per data version
    firsts = [r for r in instance.get_runs() if not r.parent_run_id and "dagster/run_key" in r.tags]
    run_keys = [(r.tags.get("dagster/sensor_name"), r.tags["dagster/run_key"]) for r in firsts
                if r.status != dg.DagsterRunStatus.CANCELED]
    assert len(run_keys) == len(set(run_keys)), run_keys  # a run key launched once
    assert not instance.get_runs(dg.RunsFilter(statuses=OPEN))
    ingested = _runs(instance, "sales_ingest", dg.DagsterRunStatus.SUCCESS)
    assert sorted(r.tags["dagster/partition"] for r in ingested) == sorted(cfg.dataset.partitions.keys[:versions])
    return done


def test_one_daemon_per_home_and_a_killed_supervisor_leaves_nothing_running(
        home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, monkeypatch, months=2, slow_loader_ms=150)
    instance, dagster_home, log = get_instance(), prepare_home(), tmp_path / "daemon.log"
    proc = _start(log)
    try:
        until("the daemon ready", lambda: _ready(log), proc, log, DEADLINE_S)
        second = _start(tmp_path / "second.log")
        assert second.wait(timeout=120) == 2  # it left an orphan daemon running beside the new one
        assert f"mlassets daemon (pid {proc.pid}, since " in (tmp_path / "second.log").read_text()
        monkeypatch.setenv("MLASSETS_DASHBOARD_PORT", "0")
        assert main(["ui", "--port", "0", "--mlflow-port", "0"]) == 2
        assert "already runs on" in capsys.readouterr().err
        from mlassets.host import daemon_lock
        from mlassets.host.daemon_tree import tree_processes

        _drop(cfg, "2024-01")
        _wait_training(instance, proc, log)
        os.kill(proc.pid, signal.SIGKILL)  # the supervisor alone: its children must notice and end
        proc.wait(timeout=30)
        deadline = time.monotonic() + 120
        while tree_processes(dagster_home) or daemon_lock.held(dagster_home):
            assert time.monotonic() < deadline, f"left running: {tree_processes(dagster_home)}"
            time.sleep(0.5)
        proc = _start(log)
        until("the version trained", lambda: _settled(instance, cfg, 1), proc, log, DEADLINE_S)
    finally:
        daemon.stop(proc)
    assert not tree_processes(dagster_home) and not daemon_lock.held(dagster_home)
    _once_each(instance, cfg, 1)
    assert "is still sending heartbeats" not in log.read_text()  # never two daemons at once


def test_a_run_killed_with_its_daemon_is_failed_told_and_resumed(
        home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _config(tmp_path, monkeypatch, months=2, slow_loader_ms=150)
    instance, log = get_instance(), tmp_path / "daemon.log"
    proc = _start(log)
    try:
        _drop(cfg, "2024-01")
        _drop(cfg, "2024-02")  # its pipeline run queues behind the first one's
        killed = _wait_training(instance, proc, log)
        daemon.stop(proc, kill=True)  # SIGKILL of the whole tree during training
        assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.STARTED  # left so for good
        proc = _start(log)
        until("the killed run failed", lambda: instance.get_run_by_id(killed.run_id).status
              == dg.DagsterRunStatus.FAILURE, proc, log, DEADLINE_S)
        until("both versions trained", lambda: _settled(instance, cfg, 2), proc, log, DEADLINE_S)
    finally:
        daemon.stop(proc)
    failed = instance.get_run_by_id(killed.run_id)
    retry = instance.get_run_by_id(failed.tags["dagster/auto_retry_run_id"])
    assert retry.run_id in {r.run_id for r in _decided(instance)} and retry.root_run_id == killed.run_id
    alerts = [json.loads(line) for line in (Path(home) / "alerts" / "alerts.jsonl").read_text().splitlines()]
    (alert,) = [a for a in alerts if a["run_id"] == killed.run_id]  # its owners were told, once
    assert "mlassets run monitor: " in alert["reason"] and "is gone" in alert["reason"]
    assert f"retried as run {retry.run_id}" in alert["reason"]
    logs = " ".join(e.message or "" for e in instance.all_logs(retry.run_id))
    assert "resumed from checkpoint step-" in logs  # not from scratch
    _once_each(instance, cfg, 2)


def _kill_at_random_moments(instance: dg.DagsterInstance, cfg: PipelineConfig, rng: random.Random, tmp_path: Path,
                            times: int) -> list[str]:
    """Start the daemon ``times`` times, each time kill it (SIGKILL: the whole tree, or the supervisor alone) at a
    random moment of an ingest, of a pipeline run, or of anything; one line per kill saying what was running."""
    kills = []
    for i in range(times):
        log = tmp_path / f"daemon-{i}.log"  # each start's own: 'ready' is this start's
        proc, whole = _start(log), rng.random() < 0.5
        try:
            until("the daemon ready", lambda: _ready(log), proc, log, DEADLINE_S)  # noqa: B023 - used at once
            target = rng.choice(["sales_ingest", "sales_pipeline", "sales_pipeline", ""])  # "": any moment
            deadline = time.monotonic() + 60  # a target whose work is all done is not waited for
            while target and time.monotonic() < deadline and proc.poll() is None and not _settled(instance, cfg, 3) \
                    and not _runs(instance, target, dg.DagsterRunStatus.STARTED):
                time.sleep(0.2)
            time.sleep(rng.uniform(0.0, 6.0))  # at a random moment of that run
            busy = [f"{r.job_name} {r.status.value}" for r in instance.get_runs(dg.RunsFilter(statuses=OPEN))]
            kills.append(f"{'tree' if whole else 'supervisor'}: {', '.join(busy) or 'idle'}")
        finally:
            if whole or len(kills) <= i:  # (after an error too: nothing may be left running)
                daemon.stop(proc, kill=True)
            else:
                os.kill(proc.pid, signal.SIGKILL)  # its reaper ends the rest; the next start waits for the lock
                proc.wait(timeout=30)
    return kills


def test_kills_at_random_moments_then_every_landed_file_is_trained_once_in_order(
        home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlassets.host.daemon_tree import tree_processes

    cfg = _config(tmp_path, monkeypatch, months=3, slow_loader_ms=40)
    instance, dagster_home = get_instance(), prepare_home()
    seed = int(os.environ.get("MLASSETS_KILL_SEED", time.time()))
    print(f"kill loop seed {seed} (MLASSETS_KILL_SEED)")
    for month in cfg.dataset.partitions.keys[:3]:
        _drop(cfg, month)
    kills = _kill_at_random_moments(instance, cfg, random.Random(seed), tmp_path, KILLS)
    print("kills:\n  " + "\n  ".join(kills))
    log = tmp_path / "daemon-final.log"
    proc = _start(log)
    try:
        until("every landed file trained", lambda: _settled(instance, cfg, 3), proc, log, 2 * DEADLINE_S)
    finally:
        daemon.stop(proc)
    # a stop that came while the supervisor was still starting (everything had settled before it) is a kill:
    # its reaper ends the tree, a moment later
    deadline = time.monotonic() + 60
    while tree_processes(dagster_home):
        assert time.monotonic() < deadline, f"left running: {tree_processes(dagster_home)}"
        time.sleep(0.5)
    done = _once_each(instance, cfg, 3)
    retried = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
    print(f"after {len(kills)} kills: {len(done)} versions trained once each, in order; {len(retried)} runs failed "
          "and were retried")
