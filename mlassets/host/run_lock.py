"""One data version, one candidate per config and code, whichever door starts the run (``mlassets run``, the
demo, the daemon's sensors, the UI).

Before ``mlassets run`` trains, it takes ``$DAGSTER_HOME/mlassets-run-<dataset>-<commit>.lock`` (an exclusive
``flock``, held for the run: a second command on the same version at the same time is refused at once, naming
the first), refuses a version a pipeline run of any door is running now, and returns the model version already
registered for the same data commit, config hash and code (git sha, dirty flag) instead of training it again.
``--again`` is a deliberate retrain: it runs, tagged ``mlassets/again``, and the new version's run says so.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.registry.made import Made, existing
from mlassets.defs.factory import pipeline_job_name
from mlassets.defs.lookup import COMMIT_TAG, DATASET_TAG

IN_PROGRESS = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING,
               dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


class AlreadyRunning(RuntimeError):
    """Another run is training this data version now; nothing was started."""


class AlreadyTrained(RuntimeError):
    """The data version has a candidate for this config and code already; nothing was started."""

    def __init__(self, message: str, version: str) -> None:
        super().__init__(message)
        self.version = version


@dataclass(frozen=True)
class Existing:
    """The candidate already registered for the data version, config and code."""

    version: str
    dagster_run_id: str


def existing_candidate(cfg: PipelineConfig, commit: str) -> Existing | None:
    """The newest model version mlassets registered from ``commit`` with this config and this code, if there is one
    (the pipeline asks the same before it trains: ``core.registry.made``), looked up in the registry the run would
    register in (the home's, or ``$MLFLOW_TRACKING_URI``): a command that has not pointed MLflow anywhere yet would
    otherwise ask MLflow's default store, find nothing and launch a run that stops itself."""
    from mlassets.core import tracking

    tracking.connect(create=True)
    found = existing(cfg.model.registered_name, Made.now(cfg, commit))
    return Existing(str(found.version), found.tags.get("dagster_run_id", "")) if found else None


def running(instance: dg.DagsterInstance, cfg: PipelineConfig, commit: str) -> dg.DagsterRun | None:
    """A pipeline run of ``commit`` in progress now (from any door), if there is one."""
    runs = instance.get_runs(dg.RunsFilter(job_name=pipeline_job_name(cfg), statuses=IN_PROGRESS,
                                           tags={DATASET_TAG: cfg.dataset.name, COMMIT_TAG: commit}), limit=1)
    return runs[0] if runs else None


@contextmanager
def only_run(instance: dg.DagsterInstance, cfg: PipelineConfig, commit: str) -> Iterator[None]:
    """Hold the version's lock while the body runs; ``AlreadyRunning`` when another command or run has it."""
    path = Path(instance.root_directory) / f"mlassets-run-{cfg.dataset.name}-{commit[:16]}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise AlreadyRunning(f"another `mlassets run` (pid {holder}) is running data version {commit[:12]} of "
                                 f"{cfg.dataset.name} now; nothing started") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        other = running(instance, cfg, commit)
        if other is not None:
            raise AlreadyRunning(f"run {other.run_id} ({other.tags.get('mlassets/trigger', 'a person')}) is running "
                                 f"data version {commit[:12]} of {cfg.dataset.name} now; nothing started")
        yield
    finally:
        os.close(fd)  # releases the lock
