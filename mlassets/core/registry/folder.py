"""A logged model's folder, checked against the registered version it is loaded as.

A folder copied whole from another version (``MLmodel`` included) is consistent with itself, so only what the
registry keeps elsewhere can tell: the version's MLflow run and logged model must be the ones the folder's
``MLmodel`` names, and the bundle's weights the ones its registry record names. MLflow writes the name and
version a folder was loaded as (``models:/NAME/VERSION`` or ``models:/NAME@ALIAS``) into the folder's
``registered_model_meta`` before loading it; that is how ``mlflow.pyfunc.load_model`` knows which version to
check (``pyfunc_loader``). Every file of the folder is checked first, against its seal (``seal``).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from mlflow.entities.model_registry import ModelVersion

from mlassets.core.records import RecordError
from mlassets.core.train.artifact import check_weights
from mlassets.core.train.result import Provenance

MLMODEL = "MLmodel"
META = "registered_model_meta"


class FolderMismatch(ValueError):
    """The folder loaded is not the registered version's model."""


def model_root(bundle_dir: str | Path) -> Path:
    """The logged model's folder (the one holding ``MLmodel``) that ``bundle_dir`` lies in."""
    for folder in Path(bundle_dir).resolve().parents:
        if (folder / MLMODEL).is_file():
            return folder
    raise FolderMismatch(f"{bundle_dir} is not inside a logged MLflow model (no {MLMODEL} above it)")


def _logged_model_id(version: ModelVersion) -> str | None:
    model_id = getattr(version, "model_id", None)
    source = version.source or ""
    return model_id or (source.removeprefix("models:/") if source.startswith("models:/m-") else None)


def expected_weights(version: ModelVersion) -> str | None:
    """The weights sha256 in the version's registry record (None: not registered by mlassets)."""
    try:
        return Provenance.from_tags(version.tags).weights_sha256
    except RecordError:
        return None


def check_folder(root: Path, version: ModelVersion, bundle_dir: str | Path) -> None:
    """``FolderMismatch`` unless the folder at ``root`` holds ``version``'s model: its run, its logged model and
    the weights its record names."""
    spec = yaml.safe_load((root / MLMODEL).read_text()) or {}
    where = f"the model folder loaded as {version.name!r} version {version.version}"
    run, model_id, want_model = spec.get("run_id"), spec.get("model_id"), _logged_model_id(version)
    if version.run_id and run != version.run_id:
        raise FolderMismatch(f"{where} was logged by MLflow run {run}, but version {version.version} by run "
                             f"{version.run_id}: a folder of another model; refusing to load it")
    if want_model and model_id and model_id != want_model:
        raise FolderMismatch(f"{where} is logged model {model_id}, but version {version.version} is {want_model}: "
                             "a folder of another model; refusing to load it")
    weights = expected_weights(version)
    if weights is not None:
        check_weights(bundle_dir, weights, f"the registry record of {version.name!r} version {version.version}")


def loaded_as(root: Path) -> tuple[str, str] | None:
    """``(name, version)`` MLflow wrote into the folder when it was loaded through the registry, if it was."""
    path = root / META
    if not path.is_file():
        return None
    meta = yaml.safe_load(path.read_text()) or {}
    name, version = meta.get("model_name"), meta.get("model_version")
    return (str(name), str(version)) if name and version else None
