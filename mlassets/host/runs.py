"""Runs of the code location's own jobs, started from the command line (``mlassets demo | ingest | run``).

A dataset's config is registered in the embedded stack (``$MLASSETS_HOME/configs/<name>.yaml``, the configs the
code location builds its graphs from unless ``$MLASSETS_CONFIGS`` says otherwise), and each run executes the job
the code location defines, rebuilt from ``mlassets.definitions``, tagged with that location's repository: the
Dagster UI lists it under the job and its timeline, and re-executes it as the same job. Steps run in the run's
process (the jobs' executor), as they do when the daemon launches them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG

from mlassets.core import paths
from mlassets.core.config import CONFIGS_ENV, ConfigError, PipelineConfig, config_paths, load_config, save_config
from mlassets.core.data.ingest import Ingested
from mlassets.core.data.raw import check_partition_key
from mlassets.core.records import Record, RecordFiles
from mlassets.defs.factory import ingest_job_name, pipeline_job_name
from mlassets.defs.jobs import FORCE_TAG, STOPPED_TAG
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import version_run_tags
from mlassets.defs.partitions import raw_partitions
from mlassets.host.code_server import LOCATION
from mlassets.host.run_liveness import process_tags
from mlassets.host.run_origin import execute_with_origin, job_origin

REPOSITORY = "__repository__"  # the code location's one repository (the location: ``code_server.LOCATION``)
WHO_TAG = "mlassets/who"  # the principal the command checked (core.identity.access): who ingested or ran it
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}  # progress lines say enough


class IngestFailed(RuntimeError):
    """A partition did not reach the watched branch (its checks failed, or its files could not be read)."""

    def __init__(self, partition: str, reason: str) -> None:
        super().__init__(f"partition {partition}: {reason}")
        self.partition, self.reason = partition, reason

    @property
    def checks(self) -> list[str]:
        """One line per failed check, without the step and partition that the first line starts with."""
        lines = [line.split("was not ingested:", 1)[-1].strip() for line in self.reason.splitlines()]
        return [line for line in lines if line]


@dataclass
class Run:
    """A finished run: its id, whether it succeeded, and what it did (read from the instance)."""

    run_id: str
    success: bool
    materialized: set[dg.AssetKey]
    failed_checks: list[dg.AssetCheckEvaluation]
    failure: str | None  # the first failed step and what its own code raised
    stopped: str = ""  # why it trained nothing on purpose (its budget): not a failure

    def record(self, key: dg.AssetKey, partition: str) -> Record | None:
        """The record ``key`` stored for ``partition`` in this run (None when this run did not materialize it)."""
        return RecordFiles(paths.records_root()).read(key.path, partition) if key in self.materialized else None


def register(cfg: PipelineConfig) -> Path | None:
    """Make ``cfg`` one of the configs the code location builds its graphs from (in this embedded stack); the file
    written when there was none for its dataset before (the caller may take it back), else None."""
    if os.environ.get(CONFIGS_ENV):
        names = {load_config(p).dataset.name for p in config_paths()}
        if cfg.dataset.name not in names:
            raise ConfigError(f"dataset {cfg.dataset.name!r} is not among ${CONFIGS_ENV} ({', '.join(sorted(names))})"
                              "; add its config there")
        return None
    new = not (paths.configs_dir() / f"{cfg.dataset.name}.yaml").is_file()
    path = save_config(cfg, paths.configs_dir())
    return path if new else None


def _failure(result: dg.ExecutionResult) -> str | None:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data is not None:
            error = event.step_failure_data.error
            user = event.step_failure_data.user_failure_data
            text = user.description if user and user.description else ""
            while not text and error is not None and error.cause is not None:
                error = error.cause
            text = text or (error.message.strip() if error is not None else "")
            return f"{event.step_key}: {text.strip()}" if text.strip() else event.step_key
    return None


def execute(instance: dg.DagsterInstance, job_name: str, partition: str, run_config: dict | None = None,
            tags: dict[str, str] | None = None) -> Run:
    """Run the code location's job ``job_name`` for ``partition`` in this process; wait for it to finish."""
    # Dagster keeps the last job definition it reconstructed (an lru_cache on the class): after a config changed
    # between two runs of one job in this process, the second would run the first's graph. Build it afresh (the
    # definitions module keeps its own cache, keyed by the configs' contents).
    ReconstructableJob.get_definition.cache_clear()
    ReconstructableJob.get_repository_definition.cache_clear()
    recon = ReconstructableRepository.for_module("mlassets.definitions", "defs").get_reconstructable_job(job_name)
    run_tags = {"dagster/partition": partition, REPOSITORY_LABEL_TAG: f"{REPOSITORY}@{LOCATION}", **process_tags(),
                **(tags or {})}  # the process tags: a killed command's run is found and marked failed
    origin = job_origin(LOCATION, REPOSITORY, job_name)  # a run of the code location: every view lists it
    with execute_with_origin(recon, instance, origin, {**QUIET, **(run_config or {})}, run_tags) as result:
        finished = instance.get_run_by_id(result.run_id)
        return Run(result.run_id, result.success, {e.asset_key for e in result.get_asset_materialization_events()},
                   [e for e in result.get_asset_check_evaluations() if not e.passed], _failure(result),
                   finished.tags.get(STOPPED_TAG, "") if finished else "")


def ingest(instance: dg.DagsterInstance, cfg: PipelineConfig, partition: str, delivered: str = "",
           corrupt: str = "", shift: float = 0.0, who: str = "") -> Ingested:
    """Ingest one partition through the ingest job (its run tagged with ``who``, the principal the command
    checked); ``IngestFailed`` (with every failed check) if it did not land."""
    check_partition_key(cfg, partition)  # before anything is made
    registered = register(cfg)  # a config new to this home: taken back if its first ingest is refused
    landed = False
    try:
        instance.add_dynamic_partitions(raw_partitions(cfg).name, [partition])
        keys = DatasetKeys.of(cfg)
        op_config = {k: v for k, v in {"delivered": delivered, "corrupt_slice": corrupt,
                                       "corrupt_shift": shift}.items() if v}
        run = execute(instance, ingest_job_name(cfg), partition,
                      {"ops": {keys.raw.to_python_identifier(): {"config": op_config}}} if op_config else None,
                      {WHO_TAG: who} if who else None)
        ingested = run.record(keys.raw, partition)
        if not isinstance(ingested, Ingested):
            raise IngestFailed(partition, run.failure or f"ingest run {run.run_id} failed")
        landed = True
        return ingested
    finally:
        if registered is not None and not landed:
            registered.unlink(missing_ok=True)


def run_pipeline(instance: dg.DagsterInstance, cfg: PipelineConfig, key: str, force: bool = False,
                 again: bool = False, waits: Callable[[str], None] | None = None, *, who: str = "") -> Run:
    """Everything downstream of the raw data, for one data version: its partition key (``2013-03.6870220f``; an
    old home's full commit id works too), the run tagged with its name and commit; ``force``: train even when the
    run's expected cost is over ``training.budget_hours``. Once per data version, config and code
    (``run_lock``: ``AlreadyTrained``, ``AlreadyRunning``); ``again``: a deliberate retrain, tagged so.

    First of all, when the config has a ``fleet`` section, the fleet admits the run's job spec or refuses it
    (``Refused``, one sentence with the numbers; nothing started); an admitted run that finds no free GPUs says where
    it waits (``waits``) and its training step waits for a slot of the `gpu` pool. ``who``: the principal the command
    checked, a tag of the run."""
    from mlassets.core.fleet.config import load_fleet
    from mlassets.core.fleet.spec import job_spec
    from mlassets.defs.fleet.admission import WAITS_TAG, check, waiting

    fleet, queued = None, ""
    if cfg.fleet is not None:  # without the section the run is no fleet job
        fleet = load_fleet()
        spec = job_spec(cfg)
        check(instance, spec, fleet)
        queued = waiting(instance, spec, fleet)
    if queued and waits is not None:
        waits(queued)
    from mlassets.core.data.store import open_store
    from mlassets.core.data.version_keys import resolve_key
    from mlassets.core.registry.made import AGAIN_TAG
    from mlassets.host.run_lock import AlreadyTrained, existing_candidate, only_run

    register(cfg)
    store = open_store()
    commit = resolve_key(store, cfg, key)
    from mlassets.defs.fleet.runs import fleet_run_tags

    tags = {**version_run_tags(cfg, commit, store), **({FORCE_TAG: "budget"} if force else {}),
            **fleet_run_tags(cfg, fleet), **({WAITS_TAG: queued} if queued else {}),  # the spec, its priority
            **({WHO_TAG: who} if who else {})}
    with only_run(instance, cfg, commit):
        found = existing_candidate(cfg, commit)
        if found is not None and not again:
            raise AlreadyTrained(f"data version {key} of {cfg.dataset.name} was trained with this config and code "
                                 f"already: model {cfg.model.registered_name} v{found.version} (run "
                                 f"{found.dagster_run_id or '?'}); nothing started (--again retrains it)",
                                 found.version)
        if again:
            tags[AGAIN_TAG] = f"retrain of v{found.version}" if found else "retrain"
        return execute(instance, pipeline_job_name(cfg), key, tags=tags)
