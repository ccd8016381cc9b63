"""One candidate per data version, config and code, whichever door started the run (``mlassets run``, the demo, the
daemon's sensors and schedule, a launch or a materialization from the Dagster UI).

What a candidate is made from (``Made``: the data commit, the config hash, the code, the lock file, a plug-in's
source and the version it warm-started from) decides whether it is new: training is deterministic, so a second
candidate made from the same would be the same weights promoted twice. The pipeline asks ``existing`` before it
trains and again before it registers; only versions the registration history holds (``registrations.check``)
count, so a model copied in by hand never stops a run. A deliberate retrain says so (``AGAIN_TAG`` on the run,
set by ``mlassets run --again``) and its version carries ``RETRAIN_OF_TAG``.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.registry.client import RegistryError, mlflow_client, record_of

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from mlassets.core.config import PipelineConfig
    from mlassets.core.train.result import Provenance

AGAIN_TAG = "mlassets/again"  # a run's tag: a deliberate retrain of a data version that has a candidate already
RETRAIN_OF_TAG = "mlassets.retrain_of"  # a version's tag: the deliberate retrain it was (the run's AGAIN_TAG)
ROOT_RUN_TAG = "mlassets.dagster_root_run"  # a version's tag: the run (and its retries) that registered it


@dataclass(frozen=True)
class Made:
    """What a candidate is made from: two made from the same are the same model."""

    data_commit: str
    config_hash: str
    git_sha: str
    git_dirty: bool
    lock_hash: str
    plugin_sha256: str = ""
    warm_start_from: str = ""

    @classmethod
    def of(cls, provenance: Provenance) -> Made:
        """What a recorded candidate (its provenance or registry record) was made from."""
        return cls(provenance.data_commit, provenance.config_hash, provenance.git_sha, provenance.git_dirty,
                   provenance.lock_hash, provenance.plugin_sha256, provenance.warm_start_from)

    @classmethod
    def now(cls, cfg: PipelineConfig, data_commit: str, warm_start_from: str = "") -> Made:
        """What a candidate trained now, by this code, from ``cfg`` on ``data_commit``, would be made from."""
        from mlassets.core import lineage
        from mlassets.core.config.families import facts_of

        code = plugin_digest(cfg.model.plugin) if facts_of(cfg.model.family).plugin else ""
        return cls(data_commit, cfg.config_hash(), lineage.git_sha(), lineage.git_dirty(), lineage.lock_hash(),
                   code, warm_start_from)


def plugin_digest(spec: str) -> str:
    """sha256 of a plug-in's source file, found without running it (what training records); '' when not found."""
    from mlassets.core.config.model import plugin_kind

    target = spec.rpartition(":")[0]
    if not target:
        return ""
    path: Path | None = Path(target) if plugin_kind(spec) == "file" else None
    if path is None:
        try:
            found = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            return ""
        path = Path(found.origin) if found is not None and found.origin else None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else ""
    except OSError:
        return ""


def existing(name: str, made: Made, root: str = "") -> ModelVersion | None:
    """The newest version of ``name`` mlassets registered from what ``made`` names, other than the one run ``root``
    (and its retries) registered, if there is one."""
    from mlflow.exceptions import MlflowException

    from mlassets.core.registry import registrations

    try:
        found = mlflow_client().search_model_versions(f"name = '{name}'")
    except MlflowException:
        return None
    same = []
    for version in found:
        if root and version.tags.get(ROOT_RUN_TAG) == root:
            continue
        try:
            if Made.of(record_of(version)) != made:
                continue
            registrations.check(version)  # a version copied in by hand, or edited, is no candidate of ours
        except RegistryError:
            continue
        same.append(version)
    return max(same, key=lambda v: int(v.version), default=None)


def already(name: str, version: ModelVersion, label: str, what: str = "nothing trained") -> str:
    """The sentence of a run that made no second candidate of a data version."""
    run = version.tags.get("dagster_run_id", "") or "?"
    return (f"data version {label} was trained with this config and code already: model {name} v{version.version} "
            f"(Dagster run {run}); {what}. A deliberate retrain says so: `mlassets run --again`, or the run tag "
            f"{AGAIN_TAG}")
