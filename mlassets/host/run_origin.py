"""Run a code-location job in this process as a run *of the code location*: the run carries the location's origin
(``repositoryOrigin`` in GraphQL), as a run the daemon or the webserver launched does, so every Dagster view lists
it (the Overview timeline groups runs by that origin and leaves out runs without one)."""

from __future__ import annotations

import sys
from collections.abc import Mapping

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.execution.api import _job_with_repository_load_data, execute_run
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

MODULE = "mlassets.definitions"  # what workspace.yaml loads


def job_origin(location: str, repository: str, job_name: str) -> RemoteJobOrigin:
    """The origin a run of ``job_name`` in ``location`` (loaded from ``mlassets.definitions``) carries."""
    target = LoadableTargetOrigin(executable_path=sys.executable, module_name=MODULE, attribute="defs")
    location_origin = ManagedGrpcPythonEnvCodeLocationOrigin(target, location_name=location)
    return RemoteJobOrigin(RemoteRepositoryOrigin(location_origin, repository), job_name)


def execute_with_origin(recon: ReconstructableJob, instance: dg.DagsterInstance, origin: RemoteJobOrigin,
                        run_config: Mapping[str, object], tags: Mapping[str, str]) -> dg.ExecutionResult:
    """``dg.execute_job(recon, …, raise_on_error=False)`` whose run records ``origin`` (execute_job records none)."""
    recon, load_data = _job_with_repository_load_data(recon)
    job_def = recon.get_definition()
    run = instance.create_run_for_job(job_def=job_def, run_config=run_config, tags=tags,
                                      job_code_origin=recon.get_python_origin(), remote_job_origin=origin,
                                      repository_load_data=load_data)
    return execute_run(recon, run, instance, raise_on_error=False)
