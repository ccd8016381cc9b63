"""The embedded Dagster instance (sqlite under ``$MLASSETS_HOME/dagster``) shared by the CLI and the UI."""

from __future__ import annotations

import os

import dagster as dg

from mlassets import settings
from mlassets.core import paths

_DAGSTER_YAML = """\
# Embedded default: sqlite storage in this folder. See infra/dagster.yaml for PostgreSQL.
telemetry:
  enabled: false
nux:
  enabled: false  # no "join the community" pop-up over the first page
"""


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
    if not os.path.exists(config):
        with open(config, "w") as fh:
            fh.write(_DAGSTER_YAML)
    return home


def get_instance() -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(prepare_home())
