"""The embedded dagster.yaml carries each team's run limit (its GPU quota) from fleet.yaml, rewritten when the fleet
changes; Dagster's own queued-run coordinator, reading that file, keeps each team within its limit and dequeues
the urgent class (``dagster/priority``) before earlier batch runs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.utils import make_new_run_id
from dagster._core.workspace.load_target import EmptyWorkspaceTarget
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

from mlassets.core.fleet.config import SHIPPED, load_fleet
from mlassets.core.fleet.spec import JobSpec
from mlassets.host.instance import get_instance, prepare_home
from mlassets.host.run_origin import job_origin


def _fleet(path: Path, **quotas: int) -> Path:
    data = yaml.safe_load(SHIPPED.read_text())
    data["teams"] = {team: {"gpu_quota": quota, "budget": 10000.0} for team, quota in quotas.items()}
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def _team_limits(instance: dg.DagsterInstance) -> dict[str, int]:
    limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    return {d["value"]: d["limit"] for d in limits if d["key"] == "mlassets/team"}


def test_the_written_instance_config_holds_each_teams_quota_and_follows_the_fleet(home: str, tmp_path: Path,
                                                                                  monkeypatch) -> None:
    fleet = _fleet(tmp_path / "fleet.yaml", vision=3, speech=1)
    monkeypatch.setenv("MLASSETS_FLEET", str(fleet))
    instance = get_instance()
    assert _team_limits(instance) == {"vision": 3, "speech": 1}
    limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert any(d["key"] == "mlassets/serial" for d in limits)  # the dataset's serial runs stay
    instance.dispose()
    _fleet(fleet, vision=2)  # the fleet changed: the next start rewrites the file
    instance = get_instance()
    assert _team_limits(instance) == {"vision": 2}
    instance.dispose()
    fleet.write_text("teams: [")  # broken: no team limits (every training run names the file), the rest holds
    instance = get_instance()
    assert _team_limits(instance) == {}
    assert instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    instance.dispose()


def _queued(instance: dg.DagsterInstance, team: str, priority: str) -> str:
    spec = JobSpec(team=team, priority=priority, ranks=1, gpus_per_rank=1, expected_minutes=30.0,
                   capacity="spot-first", preemptible=True, checkpoint_every_minutes=10.0)
    run = instance.add_run(dg.DagsterRun(job_name="sales_pipeline", run_id=make_new_run_id(),
                                         status=dg.DagsterRunStatus.QUEUED, tags=spec.tags(load_fleet(SHIPPED)),
                                         remote_job_origin=job_origin("here", "__repository__", "sales_pipeline")))
    return run.run_id


def test_dagsters_queue_keeps_each_team_in_its_quota_and_dequeues_urgent_first(home: str, tmp_path: Path) -> None:
    written = Path(prepare_home()) / "dagster.yaml"  # what mlassets writes at start, from the shipped fleet
    config = yaml.safe_load(written.read_text())
    config["run_launcher"] = {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"}  # launch nothing
    queue_home = tmp_path / "queue"
    queue_home.mkdir()
    (queue_home / "dagster.yaml").write_text(yaml.safe_dump(config))
    instance = dg.DagsterInstance.from_config(str(queue_home))
    try:
        default = [_queued(instance, "default", "batch") for _ in range(3)]  # quota 1
        batch = [_queued(instance, "product", "batch") for _ in range(3)]  # quota 2
        urgent = _queued(instance, "product", "urgent")  # submitted last
        with create_test_daemon_workspace_context(EmptyWorkspaceTarget(), instance) as context:
            list(QueuedRunCoordinatorDaemon(interval_seconds=1).run_iteration(context))
        launched = {r.run_id for r in instance.run_launcher.queue()}
        assert len(launched & set(default)) == 1
        assert urgent in launched and len(launched & set(batch)) == 1  # product: 2, the urgent one among them
        assert launched & set(batch) == {batch[0]}  # then first come, first served
        assert instance.get_run_by_id(default[1]).status == dg.DagsterRunStatus.QUEUED
    finally:
        instance.dispose()
