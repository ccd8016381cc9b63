"""The embedded Dagster instance (sqlite under ``$MLASSETS_HOME/dagster``) shared by the CLI and the UI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from mlassets.core import paths, settings
from mlassets.core.config import ConfigError, config_paths, load_config
from mlassets.core.fleet.policy import GPU_POOL

_HEADER = "# Embedded default: sqlite storage in this folder."
_DAGSTER_YAML = """\
{header} See infra/dagster.yaml for PostgreSQL.
# mlassets writes this file; it is rewritten when mlassets changes it (edit a copy under another name).
telemetry:
  enabled: false
nux:
  enabled: false  # no "join the community" pop-up over the first page
run_launcher:  # Dagster's default launcher that launches a run, and a run key, once (two daemons or not)
  module: mlassets.host.launcher
  class: OnceRunLauncher
run_coordinator:  # the daemon's queue; looked at every second (a new run starts that much sooner)
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
concurrency:
  runs:
    tag_concurrency_limits:
      - key: mlassets/serial  # a dataset's automated pipeline runs: one at a time, in the order requested
        value:
          applyLimitPerUniqueValue: true
        limit: 1
{teams}  pools:
    granularity: op  # the `gpu` pool holds training steps; its size is set from automation.gpu_slots
"""


def dagster_yaml() -> str:
    """The embedded dagster.yaml: with each team's run limit (its GPU quota) from the fleet file (``fleet.yaml``);
    runs carry ``dagster/priority`` from their priority class, which the queue dequeues highest first."""
    from mlassets.core.fleet.config import load_fleet
    from mlassets.defs.fleet.runs import queue_config

    try:
        limits = queue_config(load_fleet())["concurrency"]["runs"]["tag_concurrency_limits"]
    except ConfigError:  # `mlassets fleet` and every training run name the broken file; the queue keeps no team limit
        limits = []
    teams = "".join(f"      - {{key: {d['key']}, value: {d['value']}, limit: {d['limit']}}}  # team {d['value']}'s "
                    "GPU quota (fleet.yaml)\n" for d in limits)
    return _DAGSTER_YAML.format(header=_HEADER, teams=teams)


def prepare_home() -> str:
    """Create ``$DAGSTER_HOME`` (default ``$MLASSETS_HOME/dagster``) and its dagster.yaml; return the path.

    Production profile: ``$DAGSTER_HOME`` and its PostgreSQL dagster.yaml must exist; nothing is written there,
    and every missing setting of every service is named at once (``SettingsError``).
    """
    if settings.production():
        settings.check()
        return os.environ[settings.DAGSTER_HOME_ENV]
    home = os.environ.get("DAGSTER_HOME") or str(paths.dagster_home())
    os.makedirs(home, exist_ok=True)
    config = os.path.join(home, "dagster.yaml")
    current = open(config).read() if os.path.exists(config) else None
    wanted = dagster_yaml()
    if current is None or (current.startswith(_HEADER) and current != wanted):  # ours, older or another fleet
        with open(config, "w") as fh:
            fh.write(wanted)
    return home


def gpu_slots() -> int:
    """The `gpu` pool's size: the largest ``automation.gpu_slots`` among the configs the code location builds."""
    try:
        return max((load_config(p).automation.gpu_slots for p in config_paths()), default=1)
    except ConfigError:  # the command that reads the broken config names it; the pool keeps its size
        return 0


def ensure_gpu_pool(instance: dg.DagsterInstance, slots: int | None = None) -> None:
    """Size the `gpu` concurrency pool that training steps run in (a no-op when it already has that size)."""
    slots = gpu_slots() if slots is None else slots
    storage = instance.event_log_storage
    if slots > 0 and storage.supports_global_concurrency_limits and \
            storage.get_concurrency_info(GPU_POOL).slot_count != slots:
        storage.set_concurrency_slots(GPU_POOL, slots)


def get_instance() -> dg.DagsterInstance:
    instance = dg.DagsterInstance.from_config(prepare_home())
    if not settings.production():  # production: the daemon's start sizes it (infra/docker-compose.yaml)
        ensure_gpu_pool(instance)
    return instance


@contextmanager
def existing_instance() -> Iterator[dg.DagsterInstance | None]:
    """The home's Dagster instance when it has one (its dagster.yaml is there), disposed after; None, and nothing
    created, when it has none yet (a reader such as ``mlassets fleet`` or the dashboard)."""
    home = os.environ.get("DAGSTER_HOME") or str(paths.home() / "dagster")
    if not os.path.isfile(os.path.join(home, "dagster.yaml")):
        yield None
        return
    instance = get_instance()
    try:
        yield instance
    finally:
        instance.dispose()
