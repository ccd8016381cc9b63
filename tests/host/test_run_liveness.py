"""The pid tags a command puts on the run it executes itself: hidden from people in Dagster's run list and run page
(Dagster's hidden prefix), still read by the run monitor, and the plain names of older runs still read."""

from __future__ import annotations

import subprocess
import sys
import uuid

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.storage.tags import TagType, get_tag_type

from mlassets.host.run_liveness import (
    LEGACY_PID_TAG,
    LEGACY_STARTED_TAG,
    PID_TAG,
    STARTED_TAG,
    dead_reason,
    process_started,
    process_tags,
)
from mlassets.host.run_monitor import daemons_run


@pytest.fixture
def instance():
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


def _run(instance: dg.DagsterInstance, tags: dict[str, str]) -> DagsterRun:
    run = DagsterRun(job_name="ingest", run_id=str(uuid.uuid4()), tags=tags, status=dg.DagsterRunStatus.STARTED)
    instance.add_run(run)
    return run


def _gone_process() -> tuple[int, float]:
    """The pid and start time of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    started = process_started(proc.pid)
    proc.wait()
    assert started is not None
    return proc.pid, started


def test_the_pid_tags_are_hidden_from_people_and_read_by_the_monitor(instance, tmp_path) -> None:
    tags = process_tags()
    assert {get_tag_type(PID_TAG), get_tag_type(STARTED_TAG)} == {TagType.HIDDEN}  # what the GraphQL leaves out
    assert {PID_TAG, STARTED_TAG} <= set(tags) and not any(k.startswith("mlassets/pid") for k in tags)
    alive = _run(instance, tags)
    assert dead_reason(instance, instance.get_run_by_id(alive.run_id), str(tmp_path), 60.0) is None
    assert not daemons_run(tags)  # the command's own run: not the daemon's to retry

    pid, started = _gone_process()
    gone = _run(instance, {**tags, PID_TAG: str(pid), STARTED_TAG: f"{started:.2f}"})
    reason = dead_reason(instance, instance.get_run_by_id(gone.run_id), str(tmp_path), 60.0)
    assert reason == f"the command that ran it (pid {pid}) is gone"


def test_an_older_runs_plain_pid_tags_are_still_read(instance, tmp_path) -> None:
    host = {k: v for k, v in process_tags().items() if k not in (PID_TAG, STARTED_TAG)}
    pid, started = _gone_process()
    old = {**host, LEGACY_PID_TAG: str(pid), LEGACY_STARTED_TAG: f"{started:.2f}"}
    run = _run(instance, old)
    assert dead_reason(instance, instance.get_run_by_id(run.run_id), str(tmp_path), 60.0) == (
        f"the command that ran it (pid {pid}) is gone")
    assert not daemons_run(old)
