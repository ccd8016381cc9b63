"""Runs the command line starts are runs of the code location: they carry its origin, so Dagster's Overview
timeline (which groups runs by origin) lists them beside the daemon's."""

from __future__ import annotations

import dagster as dg
import pytest

from mlassets.host.code_server import LOCATION
from mlassets.host.run_origin import execute_with_origin, job_origin
from mlassets.host.runs import REPOSITORY


@dg.op
def _one() -> int:
    return 1


@dg.job(executor_def=dg.in_process_executor)  # what is asserted is the run record, not a child process
def tiny() -> None:
    _one()


def test_a_run_executed_here_records_the_location_origin() -> None:
    with dg.instance_for_test() as instance:
        origin = job_origin(LOCATION, REPOSITORY, "tiny")
        with execute_with_origin(dg.reconstructable(tiny), instance, origin, {}, {"who": "test"}) as result:
            assert result.success
        run = instance.get_run_by_id(result.run_id)
        assert run.tags["who"] == "test" and run.job_name == "tiny"
        stored = run.remote_job_origin
        assert stored is not None and stored.job_name == "tiny"
        assert (stored.location_name, stored.repository_origin.repository_name) == (LOCATION, REPOSITORY)
        assert run.job_code_origin is not None  # the re-execution path is kept


@pytest.mark.e2e
def test_the_demo_runs_carry_the_code_location_origin(demo) -> None:  # noqa: ANN001 - the Demo fixture
    """``mlassets ingest`` and ``mlassets run`` (what the demo calls): every run names the location and its job."""
    runs = demo.instance.get_runs()
    assert len(runs) >= 2 * len(demo.rows)  # an ingest and a pipeline run per month
    for run in runs:
        origin = run.remote_job_origin
        assert origin is not None, f"run {run.run_id} ({run.job_name}) has no origin"
        assert (origin.location_name, origin.repository_origin.repository_name, origin.job_name) == (
            LOCATION, REPOSITORY, run.job_name)
