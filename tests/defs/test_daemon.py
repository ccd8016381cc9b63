"""With a real Dagster daemon on a temporary instance (sensors every second) and nobody pressing a button: a file
dropped into the landing folder becomes a data version and a gate decision, and a passing one the champion. The
daemon is then killed, two files arrive together while it is down, and the restarted daemon handles each once,
in order, from the cursors it left (no run twice)."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mlassets.cli import daemon
from mlassets.cli.versions import data_versions
from mlassets.core.config import CONFIGS_ENV, PipelineConfig, load_config
from mlassets.core.registry.promote import live_version
from mlassets.examples.sales import write_example
from mlassets.host.instance import get_instance
from tests.daemon_wait import until

pytestmark = pytest.mark.e2e
DEADLINE_S = 420  # a limit for a slow machine, not an expectation: each wait returns as soon as it is met


def _finished(instance: dg.DagsterInstance, job: str) -> list[dg.DagsterRun]:
    runs = instance.get_runs(dg.RunsFilter(job_name=job, statuses=[dg.DagsterRunStatus.SUCCESS,
                                                                   dg.DagsterRunStatus.FAILURE]))
    return sorted(runs, key=lambda r: instance.get_run_record_by_id(r.run_id).start_time or 0)


@pytest.fixture
def cfg(home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PipelineConfig:
    config = write_example(tmp_path / "sales", months=3)
    data = yaml.safe_load(config.read_text())
    data["automation"] = {"landing": "landing", "sensor_interval_s": 1, "landing_settle_s": 1}
    data["training"]["epochs"] = 3
    config.write_text(yaml.safe_dump(data))
    monkeypatch.setenv(CONFIGS_ENV, str(config))  # the code location the daemon loads builds this graph
    return load_config(config)


def _drop(cfg: PipelineConfig, month: str) -> None:
    landing = Path(cfg.automation.landing)
    landing.mkdir(exist_ok=True)
    shutil.copy(cfg.dataset.path.replace("{partition}", month), landing / f".{month}.csv.tmp")
    (landing / f".{month}.csv.tmp").rename(landing / f"{month}.csv")  # appears whole, as a user's mv does


def test_landed_files_reach_a_gate_decision_and_a_champion_across_a_daemon_crash(cfg, tmp_path) -> None:
    log = tmp_path / "daemon.log"
    instance = get_instance()
    with log.open("w") as out:
        proc = daemon.start(out)
    try:
        _drop(cfg, "2024-01")
        until("first pipeline run", lambda: len(_finished(instance, "sales_pipeline")) == 1, proc, log, DEADLINE_S)
        assert live_version("sales_units") == "1"  # the first version passes on absolute thresholds
        daemon.stop(proc, kill=True)  # a crash: no clean shutdown

        _drop(cfg, "2024-02")
        _drop(cfg, "2024-03")  # both arrive while no daemon runs
        with log.open("a") as out:
            proc = daemon.start(out)
        until("two more pipeline runs", lambda: len(_finished(instance, "sales_pipeline")) == 3, proc, log, DEADLINE_S)
    finally:
        daemon.stop(proc)

    ingests = _finished(instance, "sales_ingest")
    assert [r.tags["dagster/partition"] for r in ingests] == ["2024-01", "2024-02", "2024-03"]  # once each
    assert all(r.tags["mlassets/trigger"] == "landing" and r.status == dg.DagsterRunStatus.SUCCESS for r in ingests)
    versions = data_versions(cfg)
    assert [v.partitions for v in versions] == [["2024-01"], ["2024-02"], ["2024-03"]]
    pipelines = _finished(instance, "sales_pipeline")
    assert [r.tags["dagster/partition"] for r in pipelines] == [v.version for v in versions]  # once each, in order
    assert all(r.tags["mlassets/trigger"] == "new_data" for r in pipelines)
    assert all(v.gate in ("pass", "reject") for v in versions)  # every version got a gate decision
    passed = [v.model_version for v in versions if v.gate == "pass"]
    assert live_version("sales_units") == passed[-1]  # the newest passing one is the champion
