"""Soak and a daemon crash on PostgreSQL: Dagster's storage, the MLflow backend store and the promotion log on a real
PostgreSQL server, a real ``dagster-daemon`` with sensors every second, and ``VERSIONS`` data versions committed in a
row: 4 in the suite, 20 in ``make soak`` (``$MLASSETS_SOAK_VERSIONS``).

The daemon is killed (SIGKILL, no shutdown) while the sensor-triggered pipeline run of an early version is in
progress, and started again. Nothing is lost: one successful pipeline run per version (none twice, none
missing), a gate decision and its check result per version, the run that was in flight finished (its tree ended with
the daemon: the restarted daemon's run monitor failed it and its retry finished it), the sensor's cursor at the
last commit, no lock error anywhere; and the store grows with the data (each version adds what it changed, not a
copy of its history). The wait for the end is for a successful run of every version: a count of finished runs
(the crashed run's failure among them) once ended it before the last version's run was launched.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mlassets.cli import daemon
from mlassets.core.config import CONFIGS_ENV, load_config
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.store import open_store
from mlassets.examples.sales import write_example
from mlassets.host.instance import dagster_yaml, get_instance
from tests.daemon_wait import until
from tests.production import postgres as pg

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
VERSIONS, KILL_AT = int(os.environ.get("MLASSETS_SOAK_VERSIONS", "4")), 3
DEADLINE_S = 1500  # a limit for a slow machine; every wait returns as soon as it is met
DAGSTER_YAML = """\
storage:
  postgres:
    postgres_db:
      hostname: {host}
      port: {port}
      db_name: soak_dagster
      username: {user}
      password: {{env: SOAK_PG_PASSWORD}}
      scheme: postgresql+psycopg2
{embedded}run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  poll_interval_seconds: 5
"""


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_twenty_versions_and_a_daemon_crash_on_postgres(postgres: pg.Server, tmp_path: Path, monkeypatch) -> None:
    for db in ("soak_dagster", "soak_mlflow", "soak_promotions"):
        postgres.create_database(db)
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    embedded = dagster_yaml().split("\n", 2)[2]  # the queue, the serial and team runs and the pools, as embedded
    (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML.format(host=postgres.host, port=postgres.port,
                                                                   user=postgres.user, embedded=embedded))
    config = write_example(tmp_path / "sales", months=VERSIONS)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"sensor_interval_s": 1}
    data["training"].update({"epochs": 1})
    config.write_text(yaml.safe_dump(data))
    for name, value in {"MLASSETS_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(dagster_home),
                        "SOAK_PG_PASSWORD": postgres.password, CONFIGS_ENV: str(config),
                        "MLFLOW_TRACKING_URI": postgres.url("soak_mlflow"),
                        "MLASSETS_PROMOTION_DB": postgres.url("soak_promotions")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MLASSETS_PROFILE", raising=False)
    cfg, instance, store = load_config(config), get_instance(), open_store()

    def pipeline_runs(*statuses: dg.DagsterRunStatus) -> list[dg.DagsterRun]:
        return instance.get_runs(dg.RunsFilter(job_name="sales_pipeline", statuses=list(statuses) or None))

    def succeeded() -> set[str]:
        """The versions with a successful pipeline run (the crashed run's retry counts for its version)."""
        return {r.tags["dagster/partition"] for r in pipeline_runs(dg.DagsterRunStatus.SUCCESS)}

    log, crashed = tmp_path / "daemon.log", None
    with log.open("w") as out:
        proc = daemon.start(out)
    try:
        ingested = [ingest_partition(store, cfg, key)  # in a row, as fast as ingestion goes
                    for key in cfg.dataset.partitions.keys]
        commits, keys = [i.data_version for i in ingested], [i.key for i in ingested]
        until(f"the pipeline run of version {KILL_AT} in progress",
               lambda: len(pipeline_runs(dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)) >= KILL_AT - 1
               and bool(pipeline_runs(dg.DagsterRunStatus.STARTED)), proc, log, DEADLINE_S)
        (in_flight,) = pipeline_runs(dg.DagsterRunStatus.STARTED)
        os.kill(proc.pid, signal.SIGKILL)  # the daemon dies, and its tree with it (the run's worker too)
        proc.wait(timeout=30)
        crashed = proc
        with log.open("a") as out:
            proc = daemon.start(out)
        until(f"a successful pipeline run of each of the {VERSIONS} versions",
               lambda: succeeded() >= set(keys)
               and not pipeline_runs(dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTED), proc, log, DEADLINE_S)
    finally:
        daemon.stop(proc)
        if crashed is not None:
            daemon.stop(crashed, kill=True)  # what the crashed daemon left running (its code server)

    runs = pipeline_runs()
    by_version = sorted(r.tags["dagster/partition"] for r in runs if r.root_run_id is None)
    assert by_version == sorted(keys)  # one run per version (its retries aside): none twice, none missing
    finished = instance.get_run_by_id(in_flight.run_id)
    if "dagster/auto_retry_run_id" in finished.tags:  # failed by the run monitor, and retried
        retry = instance.get_run_by_id(finished.tags["dagster/auto_retry_run_id"])
        assert retry.status == dg.DagsterRunStatus.SUCCESS and retry.root_run_id == in_flight.run_id
    registered = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["sales", "registered_model"])), limit=100).records
    assert sorted({r.partition_key for r in registered}) == sorted(keys)  # a gate decision per version, registered
    decided = Counter(r.tags["dagster/partition"] for r in runs for e in instance.get_records_for_run(
        r.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
        if e.event_log_entry.dagster_event.event_specific_data.check_name == "gate_passed")
    assert sorted(decided) == sorted(keys)  # every version's gate decided
    # once each; only the run the crash interrupted may have decided and then been retried from its unfinished step
    twice = {key: n for key, n in decided.items() if n > 1}
    assert not twice or (twice == {in_flight.tags["dagster/partition"]: 2}
                         and "dagster/auto_retry_run_id" in finished.tags), twice
    messages = " ".join((e.message or "") for r in runs for e in instance.all_logs(r.run_id)) + log.read_text()
    assert "database is locked" not in messages and "deadlock detected" not in messages
    stored, changed, copies = _raw_bytes(store, raw_repo(cfg), commits)
    print(f"\nsoak: {VERSIONS} versions, {len(runs)} pipeline runs, {len(registered)} gate decisions, "
          f"{sum(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)} succeeded; raw data stored "
          f"{stored / 1e6:.2f} MB = the bytes the commits changed ({changed / 1e6:.2f} MB), where a copy per version "
          f"would be {copies / 1e6:.2f} MB; whole store on disk {_size(tmp_path / 'home' / 'store') / 1e6:.1f} MB")
    # storage grows with the changed data, not with versions x history (copies / changed is about (VERSIONS + 1) / 2)
    assert stored <= changed < copies / max(2, VERSIONS // 4)


def _raw_bytes(store, repo: str, commits: list[str]) -> tuple[int, int, int]:
    """(bytes of distinct raw objects over all versions, bytes each commit added or changed, a copy per version)."""
    distinct: dict[str, int] = {}
    changed = copies = 0
    previous: dict[str, str] = {}
    for commit in commits:
        entries = {p: store.stat(repo, commit, p) for p in store.list_objects(repo, commit)}
        copies += sum(int(e["size"]) for e in entries.values())
        changed += sum(int(e["size"]) for p, e in entries.items() if previous.get(p) != e["checksum"])
        distinct.update({str(e["checksum"]): int(e["size"]) for e in entries.values()})
        previous = {p: str(e["checksum"]) for p, e in entries.items()}
    return sum(distinct.values()), changed, copies
