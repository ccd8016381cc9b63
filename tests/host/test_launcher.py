"""The embedded launcher launches a run once and a run key once, whatever two daemons did (issue 22, case 1): on a
real instance, as a second daemon would find them after the first one launched."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.errors import DagsterInvariantViolationError
from dagster._core.launcher import LaunchRunContext
from dagster._core.storage.tags import PARENT_RUN_ID_TAG, RUN_KEY_TAG, SENSOR_NAME_TAG
from dagster._core.utils import make_new_run_id

from mlassets.host.instance import get_instance
from mlassets.host.launcher import Claims, OnceRunLauncher


def _created(instance: dg.DagsterInstance, **tags: str) -> dg.DagsterRun:
    run = dg.DagsterRun(job_name="sales_ingest", run_id=make_new_run_id(), status=dg.DagsterRunStatus.NOT_STARTED,
                        tags={SENSOR_NAME_TAG: "sales_landing", RUN_KEY_TAG: "2024-01:ab12", **tags})
    return instance.add_run(run)


def test_a_run_and_a_run_key_are_launched_once(home: str) -> None:
    instance = get_instance()
    launcher = instance.run_launcher
    assert isinstance(launcher, OnceRunLauncher)
    first = _created(instance)
    claims = Claims(instance.root_directory)
    assert claims.run(first.run_id) and claims.run_key("sales_landing", "2024-01:ab12", first.run_id) == first.run_id
    # the other daemon dequeued the same run too: it is not launched again
    launcher.launch_run(LaunchRunContext(dagster_run=first, workspace=None))
    said = [e.message for e in instance.all_logs(first.run_id)]
    assert "mlassets: this run was launched before (another daemon dequeued it too); not launched again" in said
    # a second run for the same run key (two sensor daemons ticked at once): cancelled, naming the first
    second = _created(instance)
    launcher.launch_run(LaunchRunContext(dagster_run=second, workspace=None))
    assert instance.get_run_by_id(second.run_id).status == dg.DagsterRunStatus.CANCELED
    assert any(f"run key '2024-01:ab12' of sales_landing already has run {first.run_id}" in (e.message or "")
               for e in instance.all_logs(second.run_id))
    # a retry of the first run shares its run key and is launched (here it reaches the launch itself)
    retry = _created(instance, **{PARENT_RUN_ID_TAG: first.run_id})
    with pytest.raises(DagsterInvariantViolationError, match="requires a workspace"):
        launcher.launch_run(LaunchRunContext(dagster_run=retry, workspace=None))
    assert instance.get_run_by_id(retry.run_id).tags["mlassets/daemon"] == ""  # tagged by the launch (no daemon)


def test_the_monitor_retries_a_daemons_run_even_one_dequeued_and_never_launched() -> None:
    from mlassets.host.launcher import DAEMON_TAG
    from mlassets.host.run_liveness import PID_TAG
    from mlassets.host.run_monitor import daemons_run

    assert daemons_run({DAEMON_TAG: "token"})  # launched by a daemon
    assert daemons_run({SENSOR_NAME_TAG: "sales_landing"})  # dequeued by a daemon killed before it launched it
    assert not daemons_run({PID_TAG: "4242"})  # `mlassets run` executes it itself: its own to fail
